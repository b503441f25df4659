import { deepStrictEqual } from "node:assert/strict";
import {
  type JobDependencies,
  type ResolvedDependencies,
  resolveDependencies,
} from "./dependencies.ts";
import type { JobStatus } from "../../protocol/vocabulary.ts";

interface Case {
  name: string;
  jobs: JobDependencies[];
  statuses: Record<string, JobStatus>;
  expect: ResolvedDependencies;
}

const cases: Case[] = [
  {
    name: "makes a job without dependencies ready",
    jobs: [{ id: "j-1", after: [] }],
    statuses: { "j-1": "QUEUED" },
    expect: { ready: ["j-1"], blocked: [], failed: [] },
  },
  {
    name: "makes a job ready only once all of its dependencies SUCCEEDED",
    jobs: [{ id: "j-3", after: ["j-1", "j-2"] }, { id: "j-4", after: ["j-1"] }],
    statuses: { "j-1": "SUCCEEDED", "j-2": "RUNNING", "j-3": "QUEUED", "j-4": "QUEUED" },
    expect: { ready: ["j-4"], blocked: ["j-3"], failed: [] },
  },
  {
    name: "blocks on dependencies that are QUEUED, DISPATCHED, RUNNING or LOST",
    jobs: [
      { id: "a", after: ["q"] },
      { id: "b", after: ["d"] },
      { id: "c", after: ["r"] },
      { id: "e", after: ["l"] },
    ],
    statuses: { q: "QUEUED", d: "DISPATCHED", r: "RUNNING", l: "LOST" },
    expect: { ready: [], blocked: ["a", "b", "c", "e"], failed: [] },
  },
  {
    name: "fails a job whose dependency ended FAILED or CANCELLED",
    jobs: [{ id: "j-2", after: ["j-1"] }, { id: "j-4", after: ["j-0", "j-3"] }],
    statuses: { "j-0": "SUCCEEDED", "j-1": "FAILED", "j-3": "CANCELLED" },
    expect: {
      ready: [],
      blocked: [],
      failed: [
        { job_id: "j-2", reason: 'Dependency "j-1" ended FAILED: job "j-2" will not start' },
        { job_id: "j-4", reason: 'Dependency "j-3" ended CANCELLED: job "j-4" will not start' },
      ],
    },
  },
  {
    name: "fails a job at once when one dependency failed even if another still runs",
    jobs: [{ id: "j-3", after: ["j-1", "j-2"] }],
    statuses: { "j-1": "RUNNING", "j-2": "FAILED" },
    expect: {
      ready: [],
      blocked: [],
      failed: [{
        job_id: "j-3",
        reason: 'Dependency "j-2" ended FAILED: job "j-3" will not start',
      }],
    },
  },
  {
    name: "fails a job with an unknown dependency",
    jobs: [{ id: "j-2", after: ["j-404"] }],
    statuses: {},
    expect: {
      ready: [],
      blocked: [],
      failed: [{
        job_id: "j-2",
        reason: 'Dependency "j-404" is unknown: job "j-2" will not start',
      }],
    },
  },
  {
    name: "fails a job that depends on itself",
    jobs: [{ id: "j-2", after: ["j-2"] }],
    statuses: { "j-2": "QUEUED" },
    expect: {
      ready: [],
      blocked: [],
      failed: [{
        job_id: "j-2",
        reason: 'Dependency "j-2" is the job itself: job "j-2" will not start',
      }],
    },
  },
  {
    name: "fails jobs on a dependency cycle and keeps jobs merely waiting blocked",
    jobs: [
      { id: "a", after: ["b"] },
      { id: "b", after: ["a"] },
      { id: "c", after: ["d"] },
      { id: "d", after: ["x"] },
    ],
    statuses: { a: "QUEUED", b: "QUEUED", c: "QUEUED", d: "QUEUED", x: "RUNNING" },
    expect: {
      ready: [],
      blocked: ["c", "d"],
      failed: [
        {
          job_id: "a",
          reason: 'Dependency "b" waits on a dependency cycle: job "a" will not start',
        },
        {
          job_id: "b",
          reason: 'Dependency "a" waits on a dependency cycle: job "b" will not start',
        },
      ],
    },
  },
  {
    name: "fails a job that waits behind a dependency cycle",
    jobs: [{ id: "a", after: ["b"] }, { id: "b", after: ["a"] }, { id: "c", after: ["a"] }],
    statuses: { a: "QUEUED", b: "QUEUED", c: "QUEUED" },
    expect: {
      ready: [],
      blocked: [],
      failed: [
        {
          job_id: "a",
          reason: 'Dependency "b" waits on a dependency cycle: job "a" will not start',
        },
        {
          job_id: "b",
          reason: 'Dependency "a" waits on a dependency cycle: job "b" will not start',
        },
        {
          job_id: "c",
          reason: 'Dependency "a" waits on a dependency cycle: job "c" will not start',
        },
      ],
    },
  },
];

for (const c of cases) {
  Deno.test(`resolveDependencies() ${c.name}`, () => {
    const got = resolveDependencies(c.jobs, (id) => c.statuses[id]);
    deepStrictEqual(got, c.expect);
  });
}
