/** Tensor causes: tensors on different devices, shapes that do not match, a state dict that does not fit the model. */
import {
  type CauseEntry,
  type CauseMatch,
  excerpt,
  exitCodeEvidence,
  findLine,
  logEvidence,
  present,
} from "./cause.ts";
import { continuationOf, type FailureFacts, type LogLine } from "./facts.ts";
import type { Evidence } from "./failure_types.ts";
import { raisedAt } from "./traceback.ts";

/**
 * "raised at model.py:59 in forward": the deepest frame outside the Python installation and
 * site-packages of the traceback that ends in `line` (else of the last traceback).
 */
export function raisedAtEvidence(facts: FailureFacts, line: LogLine): Evidence | null {
  const tb = facts.tracebacks.find((t) => t.exception === line) ?? facts.traceback;
  const where = tb ? raisedAt(tb) : null;
  if (!where) return null;
  return {
    kind: "log",
    detail: `raised at ${where.file}:${where.line} in ${where.func}`,
    line_no: where.seq,
  };
}

/** " (raised at model.py:59)" for a likely cause, or "". */
function atSuffix(evidence: Evidence | null): string {
  return evidence ? ` (${evidence.detail.replace(/ in .*$/, "")})` : "";
}

const DEVICES = [
  /Expected all tensors to be on the same device, but found at least two devices, ([\w:]+) and ([\w:]+?)!?(?:\s|$)/,
  /Expected object of device type (\w+) but got device type (\w+)/,
  /Input type \(([\w.]+)\) and weight type \(([\w.]+)\) should be the same/,
  /expected (?:tensor for argument #\d+ '\w+' )?to have the same device as tensor for argument/i,
  /Tensor for argument #\d+ '\w+' is on (CPU|GPU), but expected (?:it|them) to be on (CPU|GPU)/,
];

/** One operation got tensors on different devices (a GPU and the CPU, or two GPUs). */
export const DEVICE_MISMATCH_CAUSE: CauseEntry = {
  id: "device_mismatch",
  title: "tensors on different devices",
  retry: "fails_again",
  retry_advice: "A retry with the same code will fail the same way: the same tensors meet on " +
    "different devices at the same place. Fix the code first.",
  fixes: [
    "Move the model and every input to one device: `model.to(device)`, and `x.to(device)` for " +
    "each tensor of a batch (targets and masks too)",
    "Create new tensors on the device they meet: `torch.zeros(n, device=x.device)`, not " +
    "`torch.zeros(n)`",
    "`model.to()` moves parameters and buffers only: register tensors kept as attributes with " +
    "`self.register_buffer(...)`",
  ],
  match(facts) {
    const hit = findLine(facts, DEVICES);
    if (!hit) return null;
    const [, a, b] = hit.match;
    const at = raisedAtEvidence(facts, hit.line);
    const which = a && b ? ` (${a} and ${b})` : "";
    return {
      confidence: 0.9,
      likely_cause: `One operation got tensors on different devices${which}${atSuffix(at)}: ` +
        `"${excerpt(hit.line.raw, 200)}"`,
      evidence: present(logEvidence(hit.line), at, exitCodeEvidence(facts)),
    };
  },
};

const MATMUL = /mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)/;
const MATMUL_OLD = /size mismatch, m1: \[(\d+) x (\d+)\], m2: \[(\d+) x (\d+)\]/;
const SHAPES = [
  MATMUL,
  MATMUL_OLD,
  /The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)/,
  /Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)/,
  /expected input\[[^\]]*\] to have (\d+) channels, but got (\d+) channels instead/,
  /shape '\[[^\]]*\]' is invalid for input of size \d+/,
  /Sizes of tensors must match except in dimension \d+/,
  // Keras and TensorFlow: a layer's input spec, an op's shapes.
  /Input \d+ (?:of layer "?[\w.-]+"? )?is incompatible with (?:the )?layer/,
  /expected axis -?\d+ of input shape to have value \d+/,
  /Incompatible shapes: \[/,
  /Dimensions must be equal, but are \d+ and \d+/,
  /Shapes \([^)]*\) and \([^)]*\) are incompatible/,
  // A classification loss given labels of another batch size or rank.
  /logits and labels must have the same first dimension/,
  // tf.data batching elements of different shapes (images of different sizes, a grayscale one
  // among RGB ones): `Cannot batch tensors with different shapes in component 0. First element
  // had shape [408,500,3] and element 1 had shape [360,343,3].`
  /Cannot batch tensors with different shapes in component \d+/,
  // JAX.
  /dot_general requires contracting dimensions to have the same shape/,
  /Incompatible shapes for broadcasting/,
];

/** Tensor shapes do not fit: a layer built for other input sizes, a wrong reshape. */
export const SHAPE_MISMATCH_CAUSE: CauseEntry = {
  id: "shape_mismatch",
  title: "tensor shape mismatch",
  retry: "fails_again",
  retry_advice: "A retry with the same code and data will fail the same way: the shapes are " +
    "fixed by the model's configuration and the input size. Fix them first.",
  fixes: [
    "Print the shapes going into the failing operation (`print(x.shape)` before it) and compare " +
    "them with what the layer was built for",
    "Reproduce in seconds on the CPU with one batch: the same error is raised there",
  ],
  match(facts) {
    const hit = findLine(facts, SHAPES);
    if (!hit) return null;
    const at = raisedAtEvidence(facts, hit.line);
    const evidence = present(logEvidence(hit.line), at, exitCodeEvidence(facts));
    const matmul = MATMUL.exec(hit.line.text) ?? MATMUL_OLD.exec(hit.line.text);
    if (matmul) {
      const [, rows, got, expected, out] = matmul;
      return {
        confidence: 0.9,
        likely_cause: `A linear layer (or matmul) expects ${expected} input features and got ` +
          `${got}${atSuffix(at)}: "${excerpt(hit.line.raw, 200)}"`,
        evidence,
        fixes: [
          `The layer was built with in_features=${expected} (${expected}x${out}), but its input ` +
          `has ${got} features per row (${rows}x${got}): set in_features=${got}, or resize the ` +
          "input to what the layer was built for (the first Linear after a flatten depends on " +
          "the image size)",
          "Use `nn.LazyLinear(out_features)` to let the layer take its input size from the " +
          "first batch",
        ],
      };
    }
    return {
      confidence: 0.85,
      likely_cause: `Tensor shapes do not fit${atSuffix(at)}: "${excerpt(hit.line.raw, 200)}"`,
      evidence,
    };
  },
};

const STATE_DICT = /Error\(s\) in loading state_dict for ([\w.]+)/;
const STATE_DICT_LINE =
  /^\s*(?:size mismatch for|Missing key\(s\) in state_dict|Unexpected key\(s\) in state_dict)/;
const SIZE_MISMATCH =
  /size mismatch for ([\w.]+): copying a param (?:with shape|of) (?:torch\.Size\()?(\[[^\]]*\])\)? from checkpoint, (?:the shape in current model is|where the shape is) (?:torch\.Size\()?(\[[^\]]*\])/;
const MISSING = /Missing key\(s\) in state_dict: (.*)/;
const UNEXPECTED = /Unexpected key\(s\) in state_dict: (.*)/;
// PyTorch before 0.4 raised a KeyError on the first key that did not fit:
// `KeyError: 'unexpected key "module.conv1.weight" in state_dict'`, `'missing keys in state_dict: …'`.
const OLD_KEY = /\b(?:unexpected key "([^"]+)"|missing keys) in state_dict\b/;
// TensorFlow's Saver: a variable of the graph that the checkpoint lacks (`NotFoundError: Key
// conv1/biases not found in checkpoint`), or its summary of that (`Restoring from checkpoint
// failed. This is most likely due to a Variable name or other graph key that is missing …`).
const TF_KEY = /\bKey (\S+) not found in checkpoint\b/;
const TF_RESTORE = /Restoring from checkpoint failed/;
// JAX: Flax's parameter that does not have the shape the module would create
// (`flax.errors.ScopeParamShapeError: Initializer expected to generate shape (96, 256) but got
// shape (504, 256) instead for parameter "kernel" in "/Dense_0"`, older Flax's `Inconsistent
// shapes between value and initializer for parameter …`), and Orbax restoring an array into
// another shape (`Requested shape: (…) is not compatible with the stored shape: (…)`). Flax's
// error also comes from parameters made in the same run for another input size, so it counts
// only where the log shows a checkpoint being restored or loaded (a restore call among the
// frames, a checkpoint library, a line such as `Restoring checkpoint from …`, `Loading
// checkpoint …` or `Rendering checkpoint at step 200000`).
const JAX_PARAM_SHAPE =
  /ScopeParamShapeError|Initializer expected to generate shape \(|Inconsistent shapes between value and initializer for parameter/;
const FLAX_SHAPES =
  /Initializer expected to generate shape \(([^)]*)\) but got shape \(([^)]*)\) instead for parameter "([^"]+)" in "([^"]*)"/;
const ORBAX_SHAPE = /Requested shape:? \(([^)]*)\) is not compatible with the stored shape/;
const RESTORING =
  /restore_checkpoint|checkpoints?\.restore|\.restore\(|Restor(?:ing|ed) (?:from|params|state)|\b(?:Load|Restor|Resum|Render|Evaluat)\w*\s+(?:from\s+|the\s+|latest\s+)?(?:checkpoint|ckpt)\b|load_checkpoint|load_params|from_pretrained|\borbax\b|CheckpointManager|checkpoint_manager|Checkpointer\b/i;

// The lines after `line` that name tensors of the mismatch, however the message was printed.
function stateDictLines(facts: FailureFacts, line: LogLine): LogLine[] {
  const kept = continuationOf(facts, line).filter((l) => STATE_DICT_LINE.test(l.text));
  if (kept.length > 0) return kept;
  const i = facts.lines.indexOf(line);
  const out: LogLine[] = [];
  for (let k = i + 1; k < facts.lines.length && out.length < 12; k++) {
    if (!STATE_DICT_LINE.test(facts.lines[k].text)) break;
    out.push(facts.lines[k]);
  }
  return out;
}

function keyList(text: string): string[] {
  return [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

/** A checkpoint saved from another model configuration does not load into this model. */
export const STATE_DICT_MISMATCH_CAUSE: CauseEntry = {
  id: "state_dict_mismatch",
  title: "checkpoint does not fit the model",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way: the same checkpoint does not fit the same " +
    "model. Match the model to the checkpoint first.",
  fixes: [
    "Build the model with the configuration the checkpoint was saved with (number of classes, " +
    "hidden size, vocabulary, layers), or load the checkpoint that belongs to this configuration",
    "To reuse a checkpoint for a different head on purpose, drop the mismatching keys and load " +
    "with `load_state_dict(state, strict=False)`, then check the missing and unexpected keys it " +
    "returns",
  ],
  match(facts) {
    const hit = findLine(facts, [STATE_DICT, SIZE_MISMATCH, MISSING, UNEXPECTED, OLD_KEY]);
    if (!hit) return tensorflowCheckpoint(facts) ?? jaxCheckpoint(facts);
    const lines = STATE_DICT.test(hit.line.text) ? stateDictLines(facts, hit.line) : [];
    const all = [hit.line, ...lines];
    const sizes = all.flatMap((l) => {
      const m = SIZE_MISMATCH.exec(l.text);
      return m ? [{ key: m[1], saved: m[2], model: m[3] }] : [];
    });
    const missing = all.flatMap((l) => keyList(MISSING.exec(l.text)?.[1] ?? ""));
    const unexpected = all.flatMap((l) => keyList(UNEXPECTED.exec(l.text)?.[1] ?? ""));
    const oldKey = OLD_KEY.exec(hit.line.text)?.[1];
    if (oldKey) unexpected.push(oldKey);
    const model = STATE_DICT.exec(hit.line.text)?.[1];
    const parts = [
      sizes.length
        ? `${sizes.length} tensor${sizes.length > 1 ? "s" : ""} differ in shape` +
          ` (${sizes[0].key}: ${sizes[0].saved} in the checkpoint, ${sizes[0].model} in the model)`
        : "",
      missing.length ? `${missing.length} key${missing.length > 1 ? "s" : ""} missing` : "",
      unexpected.length ? `${unexpected.length} unexpected` : "",
    ].filter((p) => p !== "");
    // The old KeyError names one key only: a `module.` prefix on it is the sign.
    const prefixed = unexpected.length > 0 &&
      unexpected.every((k) => k.startsWith("module.")) &&
      (missing.some((k) => unexpected.includes(`module.${k}`)) || oldKey !== undefined);
    const unprefixed = missing.length > 0 && missing.every((k) => k.startsWith("module.")) &&
      unexpected.some((k) => missing.includes(`module.${k}`));
    const fixes: string[] = [];
    if (prefixed) {
      fixes.push(
        "The checkpoint was saved from a DataParallel/DistributedDataParallel model: strip the " +
          '`module.` prefix: `{k.removeprefix("module."): v for k, v in state.items()}`',
      );
    } else if (unprefixed) {
      fixes.push(
        "The model is wrapped (DataParallel/DDP) but the checkpoint is not: load into " +
          "`model.module`, or load before wrapping",
      );
    } else if (sizes.length === 0) {
      fixes.push(
        "If the keys differ only by a `module.` prefix (a checkpoint saved from DataParallel/" +
          'DDP), strip it: `{k.removeprefix("module."): v for k, v in state.items()}`',
      );
    }
    if (sizes.length) {
      fixes.push(
        `"${sizes[0].key}" is ${sizes[0].saved} in the checkpoint and ${sizes[0].model} in the ` +
          "model: set the configuration value that sizes it to match the checkpoint",
      );
    }
    return {
      confidence: 0.93,
      likely_cause: `The checkpoint does not fit the model${model ? ` "${model}"` : ""}` +
        (parts.length ? `: ${parts.join(", ")}` : "") +
        "; it was saved with another configuration",
      evidence: present(logEvidence(hit.line, undefined, lines), exitCodeEvidence(facts)),
      fixes,
    };
  },
};

// A TensorFlow checkpoint whose variables do not match the graph being restored.
function tensorflowCheckpoint(facts: FailureFacts): CauseMatch | null {
  const hit = findLine(facts, [TF_KEY, TF_RESTORE]);
  if (!hit) return null;
  const key = TF_KEY.exec(hit.line.text)?.[1];
  return {
    confidence: 0.9,
    likely_cause: "The checkpoint does not fit the graph being restored" +
      (key ? `: it has no variable "${key}"` : "") +
      "; it was saved from another model or configuration",
    evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    fixes: [
      "Restore a checkpoint saved from this graph, or build the graph the checkpoint was saved " +
      "from (the same layers, names and scopes)",
      "To load only part of a checkpoint on purpose (a pretrained backbone), restore just the " +
      "variables it holds: a `tf.train.Saver(var_list=…)` of them, or " +
      "`tf.train.Checkpoint(…).restore(path).expect_partial()`",
    ],
  };
}

// JAX parameters restored from a checkpoint into a model of another shape (Flax, Orbax).
function jaxCheckpoint(facts: FailureFacts): CauseMatch | null {
  const orbax = findLine(facts, [ORBAX_SHAPE]);
  const flax = orbax ? null : findLine(facts, [JAX_PARAM_SHAPE]);
  const hit = orbax ?? flax;
  if (!hit) return null;
  const restoring = facts.lines.find((l) => l !== hit.line && RESTORING.test(l.text));
  if (flax && !restoring) return null;
  const m = FLAX_SHAPES.exec(hit.line.text);
  const param = m?.[3] ? ` (${m[4]}/${m[3]}: ${m[2]} restored, ${m[1]} in the model)` : "";
  return {
    confidence: 0.9,
    likely_cause: `The restored parameters do not fit the model${param}; the checkpoint was ` +
      `saved with another configuration: "${excerpt(hit.line.raw, 200)}"`,
    evidence: present(
      logEvidence(hit.line),
      restoring ? logEvidence(restoring, "a checkpoint was being restored") : null,
      exitCodeEvidence(facts),
    ),
    fixes: [
      "Build the model with the configuration the checkpoint was trained with (the same config " +
      "or gin file, the same sizes), or restore a checkpoint of this configuration",
    ],
  };
}
