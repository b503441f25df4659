/** Schema version 1: every table of the first data model (projects to cursors). */
import type { Migration } from "./mod.ts";

/** The first schema: every entity of the data model in DESIGN.md. */
export const migration001Initial: Migration = {
  version: 1,
  name: "initial",
  sql: `
CREATE TABLE projects (
  name TEXT PRIMARY KEY,
  description TEXT NOT NULL DEFAULT '',
  primary_metric TEXT,
  eval_command TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE experiments (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  project TEXT NOT NULL REFERENCES projects(name),
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  primary_metric TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (project, name)
);

CREATE TABLE nodes (
  id TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ONLINE', 'OFFLINE')),
  gpus TEXT NOT NULL DEFAULT '[]',
  cpu_count INTEGER,
  memory_mb INTEGER,
  disk_free_mb INTEGER,
  labels TEXT NOT NULL DEFAULT '{}',
  agent_version TEXT,
  cpu_slots INTEGER NOT NULL DEFAULT 2,
  avoid_foreign_gpus INTEGER NOT NULL DEFAULT 0,
  fake_gpus INTEGER NOT NULL DEFAULT 0,
  telemetry TEXT NOT NULL DEFAULT '{}',
  last_heartbeat_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  project TEXT NOT NULL REFERENCES projects(name),
  experiment TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('TRAIN', 'EVALUATE')),
  command TEXT NOT NULL,
  shell INTEGER NOT NULL DEFAULT 0,
  working_dir TEXT NOT NULL,
  env TEXT NOT NULL DEFAULT '{}',
  gpus INTEGER NOT NULL,
  node_constraint TEXT,
  priority INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 1,
  infra_attempts INTEGER NOT NULL DEFAULT 0,
  status TEXT NOT NULL CHECK (status IN ('QUEUED', 'DISPATCHED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'LOST')),
  failure_class TEXT,
  reason TEXT,
  node_id TEXT,
  gpu_indices TEXT NOT NULL DEFAULT '[]',
  runner TEXT NOT NULL DEFAULT 'process',
  image TEXT,
  tensorboard_dir TEXT,
  checkpoint_dir TEXT,
  after TEXT NOT NULL DEFAULT '[]',
  max_steps INTEGER,
  grace_s REAL,
  run_id TEXT,
  exit_code INTEGER,
  signal TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  updated_at TEXT NOT NULL
);
CREATE INDEX jobs_queue ON jobs (status, priority DESC, seq);
CREATE INDEX jobs_project ON jobs (project, experiment, seq);

CREATE TABLE runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  job_id TEXT REFERENCES jobs(id),
  attempt INTEGER NOT NULL DEFAULT 1,
  project TEXT NOT NULL REFERENCES projects(name),
  experiment TEXT,
  name TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('job', 'sdk', 'import')),
  status TEXT NOT NULL CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'LOST', 'IMPORTED')),
  config TEXT NOT NULL DEFAULT '{}',
  env TEXT NOT NULL DEFAULT '{}',
  step INTEGER,
  epoch INTEGER,
  max_steps INTEGER,
  node_id TEXT,
  import_key TEXT UNIQUE,
  gpu_indices TEXT NOT NULL DEFAULT '[]',
  dropped_points INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  updated_at TEXT NOT NULL
);
CREATE INDEX runs_project ON runs (project, experiment, seq);
CREATE INDEX runs_job ON runs (job_id, attempt);
CREATE INDEX runs_status ON runs (status, seq);

-- A NaN value is stored as NULL (SQLite turns NaN into NULL anyway); ±Inf are stored as REAL.
CREATE TABLE metric_points (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  value REAL,
  wall_time REAL NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (run_id, key, step)
) WITHOUT ROWID;
CREATE INDEX metric_points_seq ON metric_points (run_id, seq);

-- Per run and key: what lists and the primary metric need without scanning every point.
CREATE TABLE metric_keys (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  points INTEGER NOT NULL,
  first_step INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  last_value REAL,
  last_wall_time REAL NOT NULL,
  min_value REAL,
  min_step INTEGER,
  max_value REAL,
  max_step INTEGER,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

CREATE TABLE logs (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  ts TEXT NOT NULL,
  stream TEXT NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  run_id TEXT NOT NULL REFERENCES runs(id),
  step INTEGER,
  epoch INTEGER,
  path TEXT NOT NULL,
  size_bytes INTEGER,
  metrics TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL,
  UNIQUE (run_id, path)
);

CREATE TABLE evaluations (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  checkpoint_id TEXT NOT NULL REFERENCES checkpoints(id),
  job_id TEXT REFERENCES jobs(id),
  suite TEXT NOT NULL,
  metrics TEXT NOT NULL DEFAULT '{}',
  duration_s REAL,
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  finished_at TEXT
);
CREATE INDEX evaluations_checkpoint ON evaluations (checkpoint_id, seq);

CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts TEXT NOT NULL,
  type TEXT NOT NULL,
  severity TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  run_id TEXT,
  job_id TEXT,
  node_id TEXT,
  message TEXT NOT NULL,
  data TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_run ON events (run_id, id);
CREATE INDEX events_job ON events (job_id, id);
CREATE INDEX events_type ON events (type, id);

CREATE TABLE metric_definitions (
  scope TEXT NOT NULL CHECK (scope IN ('global', 'project', 'experiment')),
  scope_id TEXT NOT NULL,
  key TEXT NOT NULL,
  direction TEXT NOT NULL CHECK (direction IN ('min', 'max')),
  is_primary INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (scope, scope_id, key)
);

CREATE TABLE tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin', 'agent')),
  secret_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT,
  last_used_at TEXT
);

-- Monotonic counters that must survive restarts without scanning big tables.
CREATE TABLE sequences (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO sequences (name, value) VALUES ('metric_points', 0);

CREATE TABLE cursors (
  node_id TEXT NOT NULL,
  stream TEXT NOT NULL,
  last_seq INTEGER NOT NULL,
  PRIMARY KEY (node_id, stream)
) WITHOUT ROWID;
`,
};
