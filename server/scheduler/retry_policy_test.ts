import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_INFRA_ATTEMPTS,
  type FailureClass,
  isInfrastructureFailure,
  type RetryDecision,
  retryDecision,
  type RetryState,
} from "./retry_policy.ts";

interface Case {
  name: string;
  job: RetryState;
  failure: FailureClass;
  expect: RetryDecision;
}

const fresh = { attempt: 1, max_attempts: 3, infra_attempts: 0, max_infra_attempts: 5 };

const cases: Case[] = [
  {
    name: "requeues a job killed by a signal while attempts remain",
    job: { ...fresh, attempt: 2 },
    failure: "SIGNAL",
    expect: { requeue: true, reason: 'Requeued after "SIGNAL": attempt 2 of 3 used' },
  },
  {
    name: "gives up once max_attempts are used",
    job: { ...fresh, attempt: 3 },
    failure: "SIGNAL",
    expect: {
      requeue: false,
      reason: 'Not requeued after "SIGNAL": attempt 3 of 3 used, none left',
    },
  },
  ...(["OOM", "EXIT_CODE", "DISPATCH_FAILED"] as const).map((failure): Case => ({
    name: `never requeues ${failure}, which would fail the same way`,
    job: fresh,
    failure,
    expect: {
      requeue: false,
      reason: `Not requeued after "${failure}": the same command would fail the same way; ` +
        `fix the cause, then run "gpuctl job retry"`,
    },
  })),
  {
    name: "never requeues a cancelled job",
    job: fresh,
    failure: "CANCELLED",
    expect: { requeue: false, reason: 'Not requeued after "CANCELLED": the job was cancelled' },
  },
  ...(["NODE_LOST", "AGENT_RESTART"] as const).map((failure): Case => ({
    name: `requeues ${failure} even when max_attempts are used`,
    job: { ...fresh, attempt: 3 },
    failure,
    expect: {
      requeue: true,
      reason: `Requeued after "${failure}": infrastructure failure 1 of 5, ` +
        `not counted against max_attempts`,
    },
  })),
  {
    name: "gives up on infrastructure failures at max_infra_attempts",
    job: { ...fresh, attempt: 5, infra_attempts: 4 },
    failure: "NODE_LOST",
    expect: {
      requeue: false,
      reason: 'Not requeued after "NODE_LOST": infrastructure failure 5 of 5',
    },
  },
  {
    name: "does not count infrastructure failures against max_attempts",
    // Attempts 1 and 2 were lost with their node; attempt 3 is the first real failure.
    job: { ...fresh, attempt: 3, infra_attempts: 2 },
    failure: "SIGNAL",
    expect: { requeue: true, reason: 'Requeued after "SIGNAL": attempt 1 of 3 used' },
  },
  {
    name: "uses the default limits when the job has none",
    job: { attempt: DEFAULT_MAX_ATTEMPTS, infra_attempts: 0 },
    failure: "SIGNAL",
    expect: {
      requeue: false,
      reason: 'Not requeued after "SIGNAL": attempt 3 of 3 used, none left',
    },
  },
  {
    name: "uses the default infrastructure limit when the job has none",
    job: { attempt: 9, infra_attempts: DEFAULT_MAX_INFRA_ATTEMPTS - 1 },
    failure: "AGENT_RESTART",
    expect: {
      requeue: false,
      reason: 'Not requeued after "AGENT_RESTART": infrastructure failure 5 of 5',
    },
  },
  {
    name: "never requeues a job allowed a single attempt",
    job: { ...fresh, max_attempts: 1 },
    failure: "SIGNAL",
    expect: {
      requeue: false,
      reason: 'Not requeued after "SIGNAL": attempt 1 of 1 used, none left',
    },
  },
];

for (const c of cases) {
  Deno.test(`retryDecision() ${c.name}`, () => {
    deepStrictEqual(retryDecision(c.job, c.failure), c.expect);
  });
}

Deno.test("retryDecision() defaults to 3 attempts and 5 infrastructure failures", () => {
  strictEqual(DEFAULT_MAX_ATTEMPTS, 3);
  strictEqual(DEFAULT_MAX_INFRA_ATTEMPTS, 5);
});

Deno.test("isInfrastructureFailure() is true only for NODE_LOST and AGENT_RESTART", () => {
  const all: FailureClass[] = [
    "OOM",
    "EXIT_CODE",
    "DISPATCH_FAILED",
    "NODE_LOST",
    "AGENT_RESTART",
    "SIGNAL",
    "CANCELLED",
  ];
  deepStrictEqual(all.filter(isInfrastructureFailure), ["NODE_LOST", "AGENT_RESTART"]);
});
