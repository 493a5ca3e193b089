//! A small builder of ONNX graphs: constant tensors in the graph's float type, nodes of the
//! standard operator set, and the graph's inputs and outputs. It knows nothing of chess or of
//! the Chessformer (that is [`super::chessformer`]); values are named by strings, as in ONNX.

use super::OnnxPrecision;
use super::proto::{
    AttributeProto, Dimension, GraphProto, NodeProto, TensorProto, TensorShapeProto,
    TensorTypeProto, TypeProto, ValueInfoProto, attribute_type, data_type,
};

/// One dimension of a declared input or output shape.
#[derive(Clone, Copy, Debug)]
pub enum Dim {
    /// A fixed size.
    Fixed(i64),
    /// The dynamic batch dimension, named `batch`.
    Batch,
}

/// Builds one graph, node by node, in topological order.
#[derive(Debug)]
pub struct GraphBuilder {
    precision: OnnxPrecision,
    graph: GraphProto,
}

impl GraphBuilder {
    /// An empty graph whose float tensors (weights, input, outputs) are of `precision`.
    pub fn new(name: &str, precision: OnnxPrecision) -> GraphBuilder {
        GraphBuilder {
            precision,
            graph: GraphProto {
                name: Some(name.to_owned()),
                ..GraphProto::default()
            },
        }
    }

    /// The finished graph.
    pub fn finish(self) -> GraphProto {
        self.graph
    }

    /// The ONNX element type of the graph's float tensors.
    pub fn float_type(&self) -> i32 {
        self.precision.data_type()
    }

    fn value_info(&self, name: &str, elem_type: i32, dims: &[Dim]) -> ValueInfoProto {
        let dim = dims
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => Dimension {
                    dim_value: Some(*n),
                    dim_param: None,
                },
                Dim::Batch => Dimension {
                    dim_value: None,
                    dim_param: Some("batch".to_owned()),
                },
            })
            .collect();
        ValueInfoProto {
            name: Some(name.to_owned()),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: Some(elem_type),
                    shape: Some(TensorShapeProto { dim }),
                }),
            }),
        }
    }

    /// Declares a float input of shape `dims` named `name`; returns the name.
    pub fn input(&mut self, name: &str, dims: &[Dim]) -> String {
        let info = self.value_info(name, self.float_type(), dims);
        self.graph.input.push(info);
        name.to_owned()
    }

    /// Declares the value `value` a float output of shape `dims`, named `name` (an Identity
    /// node renames it when the names differ).
    pub fn output(&mut self, value: &str, name: &str, dims: &[Dim]) {
        if value != name {
            self.node_named("Identity", &[value], vec![], name);
        }
        let info = self.value_info(name, self.float_type(), dims);
        self.graph.output.push(info);
    }

    /// A constant float tensor of shape `dims` (values rounded to the graph's precision).
    pub fn weight(&mut self, name: &str, values: &[f32], dims: &[i64]) -> String {
        debug_assert_eq!(values.len() as i64, dims.iter().product::<i64>(), "{name}");
        let raw = self.precision.encode(values);
        self.initializer(name, self.float_type(), raw, dims)
    }

    /// A constant int64 tensor of shape `dims` (shapes, indices, axes).
    pub fn ints(&mut self, name: &str, values: &[i64], dims: &[i64]) -> String {
        debug_assert_eq!(values.len() as i64, dims.iter().product::<i64>(), "{name}");
        let raw = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.initializer(name, data_type::INT64, raw, dims)
    }

    fn initializer(&mut self, name: &str, data_type: i32, raw: Vec<u8>, dims: &[i64]) -> String {
        self.graph.initializer.push(TensorProto {
            dims: dims.to_vec(),
            data_type: Some(data_type),
            name: Some(name.to_owned()),
            raw_data: Some(raw),
        });
        name.to_owned()
    }

    /// Adds a node `op` with one output, named `name`; returns the name.
    pub fn node_named(
        &mut self,
        op: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
        name: &str,
    ) -> String {
        self.graph.node.push(NodeProto {
            input: inputs.iter().map(|s| (*s).to_owned()).collect(),
            output: vec![name.to_owned()],
            name: Some(name.to_owned()),
            op_type: Some(op.to_owned()),
            attribute: attributes,
            domain: None,
        });
        name.to_owned()
    }

    /// `a @ b` (batched, broadcasting).
    pub fn matmul(&mut self, name: &str, a: &str, b: &str) -> String {
        self.node_named("MatMul", &[a, b], vec![], name)
    }

    /// `a + b` (broadcasting).
    pub fn add(&mut self, name: &str, a: &str, b: &str) -> String {
        self.node_named("Add", &[a, b], vec![], name)
    }

    /// `a * b` (broadcasting).
    pub fn mul(&mut self, name: &str, a: &str, b: &str) -> String {
        self.node_named("Mul", &[a, b], vec![], name)
    }

    /// `x` reshaped to `shape` (0 keeps that input dimension, -1 is inferred).
    pub fn reshape(&mut self, name: &str, x: &str, shape: &[i64]) -> String {
        let shape = self.ints(&format!("{name}/shape"), shape, &[shape.len() as i64]);
        self.node_named("Reshape", &[x, &shape], vec![], name)
    }

    /// `x` with its axes permuted by `perm`.
    pub fn transpose(&mut self, name: &str, x: &str, perm: &[i64]) -> String {
        self.node_named("Transpose", &[x], vec![ints_attr("perm", perm)], name)
    }

    /// Softmax over the last axis.
    pub fn softmax(&mut self, name: &str, x: &str) -> String {
        self.node_named("Softmax", &[x], vec![int_attr("axis", -1)], name)
    }

    /// An elementwise operator of one input (`Tanh`, `Sigmoid`, `Relu`, ...).
    pub fn unary(&mut self, op: &str, name: &str, x: &str) -> String {
        self.node_named(op, &[x], vec![], name)
    }

    /// `x` converted to the ONNX element type `to`.
    pub fn cast(&mut self, name: &str, x: &str, to: i32) -> String {
        self.node_named("Cast", &[x], vec![int_attr("to", i64::from(to))], name)
    }

    /// The slice `starts..ends` of `x` along `axes`.
    pub fn slice(
        &mut self,
        name: &str,
        x: &str,
        axes: &[i64],
        starts: &[i64],
        ends: &[i64],
    ) -> String {
        let n = axes.len() as i64;
        let starts = self.ints(&format!("{name}/starts"), starts, &[n]);
        let ends = self.ints(&format!("{name}/ends"), ends, &[n]);
        let axes = self.ints(&format!("{name}/axes"), axes, &[n]);
        self.node_named("Slice", &[x, &starts, &ends, &axes], vec![], name)
    }

    /// `x` gathered at the int64 indices `indices` along `axis`.
    pub fn gather(&mut self, name: &str, x: &str, indices: &str, axis: i64) -> String {
        self.node_named("Gather", &[x, indices], vec![int_attr("axis", axis)], name)
    }

    /// The concatenation of `parts` along `axis`.
    pub fn concat(&mut self, name: &str, parts: &[&str], axis: i64) -> String {
        self.node_named("Concat", parts, vec![int_attr("axis", axis)], name)
    }

    /// `y = x W^T + b` for a weight `w` `[out, in]` (row-major values) and an optional bias,
    /// each multiplied by `scale` (a scale folded into the layer).
    pub fn dense(
        &mut self,
        name: &str,
        x: &str,
        w: &[f32],
        (out, inp): (i64, i64),
        b: Option<&[f32]>,
        scale: f32,
    ) -> String {
        let mut wt = vec![0f32; w.len()];
        for o in 0..out as usize {
            for i in 0..inp as usize {
                wt[i * out as usize + o] = w[o * inp as usize + i] * scale;
            }
        }
        let wt = self.weight(&format!("{name}/w"), &wt, &[inp, out]);
        let y = self.matmul(&format!("{name}/matmul"), x, &wt);
        match b {
            Some(b) => {
                let b: Vec<f32> = b.iter().map(|v| v * scale).collect();
                let b = self.weight(&format!("{name}/b"), &b, &[out]);
                self.add(name, &y, &b)
            }
            None => self.node_named("Identity", &[&y], vec![], name),
        }
    }

    /// Mish, `x tanh(softplus(x))`, from operators of every opset (the `Mish` operator needs
    /// opset 18). ONNX before opset 22 has no bf16 `Softplus`, so a bf16 graph computes it
    /// in f32, as Lc0's converter does.
    pub fn mish(&mut self, name: &str, x: &str) -> String {
        let sp = if self.precision == OnnxPrecision::Bf16 {
            let wide = self.cast(&format!("{name}/to_f32"), x, data_type::FLOAT);
            let sp = self.unary("Softplus", &format!("{name}/softplus"), &wide);
            self.cast(&format!("{name}/to_bf16"), &sp, data_type::BFLOAT16)
        } else {
            self.unary("Softplus", &format!("{name}/softplus"), x)
        };
        let t = self.unary("Tanh", &format!("{name}/tanh"), &sp);
        self.mul(name, x, &t)
    }

    /// Swish, `x sigmoid(x)`.
    pub fn swish(&mut self, name: &str, x: &str) -> String {
        let s = self.unary("Sigmoid", &format!("{name}/sigmoid"), x);
        self.mul(name, x, &s)
    }

    /// LayerNorm over the last axis with gain and bias (`LayerNormalization`, opset 17).
    pub fn layer_norm(
        &mut self,
        name: &str,
        x: &str,
        gain: &[f32],
        bias: &[f32],
        eps: f32,
    ) -> String {
        let n = gain.len() as i64;
        let g = self.weight(&format!("{name}/gain"), gain, &[n]);
        let b = self.weight(&format!("{name}/bias"), bias, &[n]);
        let attrs = vec![int_attr("axis", -1), float_attr("epsilon", eps)];
        self.node_named("LayerNormalization", &[x, &g, &b], attrs, name)
    }

    /// RMSNorm over the last axis, `x / sqrt(mean(x^2) + eps) * gain`, from basic operators
    /// (ONNX has `RMSNormalization` only from opset 23). In f16 and bf16 graphs the norm runs in
    /// f32, since squares of activations above 256 overflow f16.
    pub fn rms_norm(&mut self, name: &str, x: &str, gain: &[f32], eps: f32) -> String {
        let narrow = self.precision != OnnxPrecision::F32;
        let input = if narrow {
            self.cast(&format!("{name}/to_f32"), x, data_type::FLOAT)
        } else {
            x.to_owned()
        };
        let sq = self.mul(&format!("{name}/square"), &input, &input);
        let mean = self.node_named(
            "ReduceMean",
            &[&sq],
            vec![ints_attr("axes", &[-1]), int_attr("keepdims", 1)],
            &format!("{name}/mean"),
        );
        let eps = self.initializer(
            &format!("{name}/eps"),
            data_type::FLOAT,
            eps.to_le_bytes().to_vec(),
            &[],
        );
        let var = self.add(&format!("{name}/mean_eps"), &mean, &eps);
        let rms = self.unary("Sqrt", &format!("{name}/rms"), &var);
        let normed = self.node_named("Div", &[&input, &rms], vec![], &format!("{name}/normed"));
        let normed = if narrow {
            self.cast(&format!("{name}/narrow"), &normed, self.float_type())
        } else {
            normed
        };
        let g = self.weight(&format!("{name}/gain"), gain, &[gain.len() as i64]);
        self.mul(name, &normed, &g)
    }
}

/// An integer attribute.
pub fn int_attr(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_owned()),
        i: Some(value),
        r#type: Some(attribute_type::INT),
        ..AttributeProto::default()
    }
}

/// A float attribute.
pub fn float_attr(name: &str, value: f32) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_owned()),
        f: Some(value),
        r#type: Some(attribute_type::FLOAT),
        ..AttributeProto::default()
    }
}

/// A list-of-integers attribute.
pub fn ints_attr(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: Some(name.to_owned()),
        ints: values.to_vec(),
        r#type: Some(attribute_type::INTS),
        ..AttributeProto::default()
    }
}
