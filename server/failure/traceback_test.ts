import assert from "node:assert/strict";
import { cleanLines } from "./facts.ts";
import { findTracebacks, lastInformativeTraceback, raisedAt } from "./traceback.ts";
import { logTail } from "./_test_input.ts";

Deno.test("findTracebacks() reads frames and the final exception line", () => {
  const lines = cleanLines(logTail(`
Traceback (most recent call last):
  File "/x/train.py", line 10, in <module>
    main()
  File "/x/train.py", line 5, in main
    1 / 0
    ~~^~~
ZeroDivisionError: division by zero
`));
  const [tb] = findTracebacks(lines);
  assert.equal(tb.type, "ZeroDivisionError");
  assert.equal(tb.message, "division by zero");
  assert.equal(tb.exception?.seq, 1006);
  assert.deepEqual(tb.frames.map((f) => [f.file, f.line, f.func, f.seq]), [
    ["/x/train.py", 10, "<module>", 1001],
    ["/x/train.py", 5, "main", 1003],
  ]);
});

Deno.test("findTracebacks() skips other processes' lines interleaved into a block", () => {
  const lines = cleanLines(logTail(`
[rank1]: Traceback (most recent call last):
[rank1]:   File "/x/train.py", line 3, in <module>
INFO:root:rank 0 saved checkpoint
WARNING: something else
[rank1]:     boom()
[rank1]: RuntimeError: boom
`));
  const [tb] = findTracebacks(lines);
  assert.equal(tb.type, "RuntimeError");
  assert.equal(tb.exception?.seq, 1005);
  assert.equal(tb.exception?.raw, "[rank1]: RuntimeError: boom");
});

Deno.test("findTracebacks() keeps a block the tail cuts off, without an exception", () => {
  const blocks = findTracebacks(cleanLines(logTail(`
Traceback (most recent call last):
  File "/x/train.py", line 3, in <module>
`)));
  assert.equal(blocks.length, 1);
  assert.equal(blocks[0].exception, null);
});

Deno.test("lastInformativeTraceback() looks past torchrun's ChildFailedError to the worker's", () => {
  const lines = cleanLines(logTail(`
[rank0]: Traceback (most recent call last):
[rank0]:   File "/w/train.py", line 40, in <module>
[rank0]:     step()
[rank0]: AssertionError: shapes differ
E0612 14:02:12.017000 140211 api.py:833] failed (exitcode: 1) local_rank: 0 (pid: 7) of binary: python
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
    sys.exit(main())
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
`));
  assert.equal(findTracebacks(lines).length, 2);
  assert.equal(lastInformativeTraceback(lines)?.type, "AssertionError");
});

Deno.test("raisedAt() is the deepest frame outside the Python installation and site-packages", () => {
  const [tb] = findTracebacks(cleanLines(logTail(`
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/home/ana/proj/train.py", line 80, in <module>
    main()
  File "/home/ana/proj/model.py", line 59, in forward
    x = self.fc(x)
  File "C:\\Users\\ana\\venv\\Lib\\site-packages\\torch\\nn\\modules\\module.py", line 1747, in _call_impl
    return forward_call(*args, **kwargs)
  File "/usr/lib/python3.12/functools.py", line 909, in wrapper
    return dispatch(args[0].__class__)(*args, **kw)
RuntimeError: boom
`)));
  assert.deepEqual(raisedAt(tb), {
    file: "/home/ana/proj/model.py",
    line: 59,
    func: "forward",
    seq: 1004,
  });
  const [lib] = findTracebacks(cleanLines(logTail(`
  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
RuntimeError: boom
`)));
  assert.equal(raisedAt(lib)?.line, 125, "all library frames: the deepest one");
});

Deno.test("findTracebacks() keeps an exception's continuation lines up to the next record", () => {
  const [tb] = findTracebacks(cleanLines(logTail(`
Traceback (most recent call last):
  File "/w/train.py", line 3, in <module>
RuntimeError: Error(s) in loading state_dict for Net:
	Missing key(s) in state_dict: "fc.weight".
[2024-05-01 10:00:00] INFO next run
`)));
  assert.deepEqual(tb.continuation.map((l) => l.text), [
    '\tMissing key(s) in state_dict: "fc.weight".',
  ]);
});
