import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { expectDiagnosis, failed } from "./_test_input.ts";

// https://github.com/IrisRainbowNeko/genshin_auto_fish/issues/254 (shortened)
const STATE_DICT = `
Traceback (most recent call last):
  File "fishing.py", line 215, in <module>
    main(exp, args)
  File "fishing.py", line 117, in main
    model.load_state_dict(ckpt["model"])
  File "C:\\Gen\\Anaconda\\envs\\ysfish\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 1223, in load_state_dict
    raise RuntimeError('Error(s) in loading state_dict for {}:\\n\\t{}'.format(
RuntimeError: Error(s) in loading state_dict for YOLOX:
        size mismatch for head.cls_preds.0.weight: copying a param with shape torch.Size([80, 96, 1, 1]) from checkpoint, the shape in current model is torch.Size([6, 96, 1, 1]).
        size mismatch for head.cls_preds.0.bias: copying a param with shape torch.Size([80]) from checkpoint, the shape in current model is torch.Size([6]).
`;

const PREFIXED = `
RuntimeError: Error(s) in loading state_dict for ResNet:
	Missing key(s) in state_dict: "conv1.weight", "fc.weight".
	Unexpected key(s) in state_dict: "module.conv1.weight", "module.fc.weight".
`;

// https://github.com/thu-ml/TurboDiffusion/issues/62 (shortened), with a user frame added
// above torch's as in https://github.com/dongzhuoyao/motionfm/issues/4
const MATMUL = `
Traceback (most recent call last):
  File "/home/user/motionfm/model/mdm_flow.py", line 423, in forward
    x = self.poseEmbedding(x)  # [seqlen, bs, d]
  File "/root/miniconda3/envs/comfy/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1784, in _call_impl
    return forward_call(*args, **kwargs)
  File "/root/miniconda3/envs/comfy/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: mat1 and mat2 shapes cannot be multiplied (77x768 and 4096x5120)
`;

// https://github.com/HerreraKrachTeichmann/NJODE/issues/14
const DEVICES = `
  File "/home/administrator/NJODE/NJODE/../NJODE/models.py", line 196, in forward
    input_f = torch.cat([torch.tanh(x), torch.tanh(h), tau, tdiff],
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking argument for argument tensors in method wrapper___cat)
`;

// https://github.com/pytorch/pytorch/issues/170524 (shortened)
const CUDNN = `
Epoch: 1
Traceback (most recent call last):
  File "/home/nbw/ResNet.py", line 132, in <module>
    loss.backward()
  File "/root/anaconda3/envs/deepspeed/lib/python3.12/site-packages/torch/_tensor.py", line 648, in backward
    torch.autograd.backward(
RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED
`;

Deno.test("diagnoseFailure() recognises tensor, checkpoint and cuDNN failures (table)", () => {
  const cases = [
    {
      name: "state_dict size mismatch",
      input: failed(STATE_DICT),
      want: {
        cause: "state_dict_mismatch",
        line: 1007,
        likely:
          /"YOLOX": 2 tensors differ in shape \(head\.cls_preds\.0\.weight: \[80, 96, 1, 1\] in the checkpoint, \[6, 96, 1, 1\] in the model\)/,
        retry: "fails_again" as const,
        fix: /strict=False/,
      },
    },
    {
      name: "state_dict saved from DataParallel",
      input: failed(PREFIXED),
      want: {
        cause: "state_dict_mismatch",
        line: 1000,
        likely: /2 keys missing, 2 unexpected/,
        retry: "fails_again" as const,
        fix: /strip the `module\.` prefix/,
      },
    },
    {
      name: "matmul shapes",
      input: failed(MATMUL),
      want: {
        cause: "shape_mismatch",
        line: 1007,
        likely:
          /expects 4096 input features and got 768 \(raised at \/home\/user\/motionfm\/model\/mdm_flow\.py:423\)/,
        retry: "fails_again" as const,
        fix: /in_features=768/,
      },
    },
    {
      name: "tensors on two devices",
      input: failed(DEVICES),
      want: {
        cause: "device_mismatch",
        line: 1002,
        likely: /\(cuda:0 and cpu\)/,
        retry: "fails_again" as const,
        fix: /device=x\.device/,
      },
    },
    {
      name: "cuDNN execution failed",
      input: failed(CUDNN),
      want: {
        cause: "cudnn_error",
        line: 1006,
        likely: /CUDNN_STATUS_EXECUTION_FAILED/,
        retry: "fails_again" as const,
        fix: /cudnn\.enabled = False/,
      },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
});

Deno.test("diagnoseFailure() keeps the continuation lines that name the tensors in the evidence", () => {
  const d = diagnoseFailure(failed(STATE_DICT));
  const lines = d.evidence[0].detail.split("\n");
  assert.equal(lines.length, 3);
  assert.match(lines[0], /^RuntimeError: Error\(s\) in loading state_dict for YOLOX:$/);
  assert.match(lines[1], /^size mismatch for head\.cls_preds\.0\.weight/);
  assert.match(lines[2], /^size mismatch for head\.cls_preds\.0\.bias/);
});

Deno.test("diagnoseFailure() says where a shape error was raised in the user's code, not in torch", () => {
  const d = diagnoseFailure(failed(MATMUL));
  assert.deepEqual(d.evidence[1], {
    kind: "log",
    detail: "raised at /home/user/motionfm/model/mdm_flow.py:423 in forward",
    line_no: 1001,
  });
});

Deno.test("diagnoseFailure() retries a GPU hardware fault and a lost connection", () => {
  expectDiagnosis(
    "ECC",
    failed("RuntimeError: CUDA error: uncorrectable ECC error encountered\n"),
    { cause: "gpu_hardware_error", line: 1000, retry: "may_help" },
  );
  expectDiagnosis(
    "gloo reset",
    failed(
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [192.168.70.92]:25266: Connection reset by peer\n",
    ),
    { cause: "connection_reset", line: 1000, retry: "may_help" },
  );
  expectDiagnosis(
    "torchrun stopped",
    failed(
      "W0409 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, shutting down workers\n",
    ),
    { cause: "terminated", line: 1000, retry: "may_help" },
  );
  expectDiagnosis(
    "could not start",
    failed("", {
      exit_code: null,
      failure_class: "DISPATCH_FAILED",
      events: [{
        type: "RUN_FAILED",
        message: 'Run of job "a" (j-1) attempt 1 ended FAILED: working directory "/x" does ' +
          "not exist on this host",
      }],
    }),
    {
      cause: "dispatch_failed",
      likely: /working directory "\/x" does not exist/,
      retry: "fails_again",
    },
  );
});

Deno.test("diagnoseFailure() reads tf.data batching elements of different shapes as a shape mismatch", () => {
  expectDiagnosis(
    "Cannot batch tensors",
    failed(
      "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot batch tensors with different shapes in component 1. First element had shape [900,600,3] and element 1 had shape [757,600,3].\n         [[{{node data/IteratorGetNext}}]]",
    ),
    { cause: "shape_mismatch", line: 1000, retry: "fails_again" },
  );
});

Deno.test("diagnoseFailure() reads JAX parameters restored into a model of another shape as a checkpoint that does not fit, only where a restore shows", () => {
  const flax =
    'flax.errors.ScopeParamShapeError: Initializer expected to generate shape (64, 10) but got shape (64, 12) instead for parameter "kernel" in "/head/Dense_0". (https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.ScopeParamShapeError)';
  const restored = expectDiagnosis(
    "Flax after a restore",
    failed(
      `I0301 12:00:01.000000 139 checkpoints.py:1054] Restoring checkpoint from /ckpt/checkpoint_4000\n${flax}`,
    ),
    {
      cause: "state_dict_mismatch",
      line: 1001,
      retry: "fails_again",
      likely: /\/head\/Dense_0\/kernel: 64, 12 restored, 64, 10 in the model/,
    },
  );
  assert.ok(restored.evidence.some((e) => e.line_no === 1000));
  const frames = `Traceback (most recent call last):
  File "/src/eval.py", line 40, in main
    state = checkpoints.restore_checkpoint(config.checkpoint_dir, state)
  File "/src/eval.py", line 52, in main
    out = model.apply({"params": state.params}, batch)
flax.errors.ScopeParamShapeError: Inconsistent shapes between value and initializer for parameter "scale" in "/GroupNorm_0": (1, 1, 1, 32), (32,).`;
  expectDiagnosis("older Flax, restore in a frame", failed(frames), {
    cause: "state_dict_mismatch",
    line: 1005,
    retry: "fails_again",
  });
  expectDiagnosis(
    "Orbax",
    failed(
      "ValueError: Requested shape: (4096, 32, 128) is not compatible with the stored shape: (4096, 128, 32). Truncating/padding is disabled by setting of `strict=True`.",
    ),
    { cause: "state_dict_mismatch", line: 1000, retry: "fails_again" },
  );
  expectDiagnosis(
    "an evaluation that names its checkpoint",
    failed(`I0101 render.py:61] Rendering checkpoint at step 25000.\n${flax}`),
    { cause: "state_dict_mismatch", line: 1001, retry: "fails_again" },
  );
  // Parameters made in the same run for another input size: the code's bug, not a checkpoint,
  // even with a checkpoint's name elsewhere in the log.
  const saved = diagnoseFailure(failed(`Saved checkpoint to /ckpt/checkpoint_100\n${flax}`));
  assert.notEqual(saved.cause_id, "state_dict_mismatch");
  const alone = diagnoseFailure(failed(flax));
  assert.notEqual(alone.cause_id, "state_dict_mismatch");
});
