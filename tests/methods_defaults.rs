//! docs/METHODS.md states each default as `` `key` = value `` (or `` `table.key` = value ``):
//! every such number must be the default a config that leaves the key out gets, as `cfzero info
//! --config` prints it (the config with every default filled in, which is what the program
//! uses). A default changed in code and not in the docs, or the reverse, fails here.

mod common;

use common::*;

/// The full config of a file that sets only the network's required shape: every other key at
/// its default, as `cfzero info --config` prints it.
fn defaults() -> toml::Table {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bare.toml");
    std::fs::write(
        &path,
        "[network]\nlayers = 2\nd_model = 64\nheads = 4\ndff = 128\nd_pol = 64\n",
    )
    .unwrap();
    let out = cfzero_ok(&["info", "--config", path.to_str().unwrap()]);
    let text: String = out
        .lines()
        .skip(1) // `# config PATH`
        .take_while(|l| !l.starts_with("# what each command uses"))
        .map(|l| format!("{l}\n"))
        .collect();
    toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Every `(name, number)` METHODS.md states as `` `name` = number ``: the name as written
/// (dotted for a table's key), the number without thousands separators or a closing stop.
fn stated(text: &str) -> Vec<(String, f64)> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("` = ") {
        let Some(open) = text[..i].rfind('`') else {
            continue;
        };
        let name = &text[open + 1..i];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.')
        {
            continue;
        }
        let rest = &text[i + 4..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
            .collect();
        let number = number.trim_end_matches(['.', ',']).replace(',', "");
        if let Ok(value) = number.parse::<f64>() {
            found.push((name.to_owned(), value));
        }
    }
    found
}

/// The values of `name` in `table` and its nested tables: `a.b` is key `b` of table `a`; a bare
/// key may be any table's.
fn values_of(table: &toml::Table, name: &str) -> Vec<f64> {
    let number = |v: &toml::Value| match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    };
    if let Some((head, rest)) = name.split_once('.')
        && let Some(toml::Value::Table(inner)) = table.get(head)
    {
        return values_of(inner, rest)
            .into_iter()
            .chain(
                // A dotted name may also be a key's path below a nested table.
                inner
                    .values()
                    .filter_map(|v| v.as_table())
                    .flat_map(|t| values_of(t, rest)),
            )
            .collect();
    }
    let mut out: Vec<f64> = table.get(name).and_then(number).into_iter().collect();
    for v in table.values() {
        if let toml::Value::Table(inner) = v {
            out.extend(values_of(inner, name));
        }
    }
    out
}

#[test]
fn every_default_methods_states_is_the_programs() {
    let config = defaults();
    let methods = std::fs::read_to_string(repo_root().join("docs/METHODS.md")).unwrap();
    let claims = stated(&methods);
    assert!(
        claims.len() >= 20,
        "only {} stated defaults found",
        claims.len()
    );
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, value) in &claims {
        let actual = values_of(&config, name);
        if actual.is_empty() {
            // Not a config key (a constant of the code, a flag): nothing to compare.
            continue;
        }
        checked += 1;
        if !actual
            .iter()
            .any(|a| (a - value).abs() <= 1e-9 * value.abs().max(1.0))
        {
            wrong.push(format!(
                "`{name}` = {value} in METHODS.md, {actual:?} in the config"
            ));
        }
    }
    assert!(
        checked >= 20,
        "only {checked} stated defaults are config keys"
    );
    assert!(wrong.is_empty(), "stale defaults:\n{}", wrong.join("\n"));
}
