"""A peer's hyperparameter search over the synthetic example's --lr, for `deno task bench:peers`:
Optuna (TPE sampler, its default) with a SuccessiveHalvingPruner or a HyperbandPruner, or Ray
Tune's ASHA scheduler (random search). Trials run one at a time, on the same curve a gpuctl
trial logs (synthetic_objective.py), and report eval/loss every --eval-every steps.

Prints one JSON object: every trial's lr, start and end (Unix seconds), its final eval/loss
(null when stopped early) and the step it was stopped at, and the search's wall time.
`optimum` prints the best final value the curve offers over the range instead."""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from synthetic_objective import eval_curve  # noqa: E402


def run_optuna(a):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if a.pruner == "sha":
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=a.min_steps, reduction_factor=2)
    else:
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=a.min_steps, max_resource=a.steps, reduction_factor=2)
    study = optuna.create_study(
        direction="minimize", sampler=optuna.samplers.TPESampler(seed=a.seed), pruner=pruner)
    trials = []

    def objective(trial):
        lr = trial.suggest_float("lr", a.lr_min, a.lr_max, log=True)
        rec = {"lr": lr, "start": time.time(), "value": None, "stopped_at": None}
        trials.append(rec)
        try:
            loss = None
            for step, loss in eval_curve(lr, a.steps, a.eval_every, sleep=a.sleep):
                trial.report(loss, step)
                if trial.should_prune():
                    rec["stopped_at"] = step
                    raise optuna.TrialPruned()
            rec["value"] = loss
            return loss
        finally:
            rec["end"] = time.time()

    study.optimize(objective, n_trials=a.trials)
    return trials


def run_ray(a):
    import ray
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler
    from ray.tune.search import BasicVariantGenerator

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    steps, eval_every, sleep = a.steps, a.eval_every, a.sleep
    objective_dir = os.path.dirname(os.path.abspath(__file__))

    def trainable(config):
        sys.path.insert(0, objective_dir)
        from synthetic_objective import eval_curve as curve
        start = time.time()
        for step, loss in curve(config["lr"], steps, eval_every, sleep=sleep):
            tune.report({"eval_loss": loss, "step": step, "t_start": start, "t_now": time.time()})

    scheduler = ASHAScheduler(time_attr="step", metric="eval_loss", mode="min", max_t=a.steps,
                              grace_period=a.min_steps, reduction_factor=2)
    with tempfile.TemporaryDirectory(prefix="gpuctl-peers-ray-") as storage:
        tuner = tune.Tuner(
            trainable,
            param_space={"lr": tune.loguniform(a.lr_min, a.lr_max)},
            tune_config=tune.TuneConfig(
                num_samples=a.trials, scheduler=scheduler, max_concurrent_trials=1, reuse_actors=True,
                search_alg=BasicVariantGenerator(random_state=a.seed)),
            run_config=tune.RunConfig(storage_path=storage, verbose=0),
        )
        results = tuner.fit()
        trials = []
        for r in results:
            m = r.metrics or {}
            if "t_start" not in m:
                continue
            done = m.get("step") == a.steps - 1
            trials.append({
                "lr": r.config["lr"], "start": m["t_start"], "end": m["t_now"],
                "value": m["eval_loss"] if done else None,
                "stopped_at": None if done else m.get("step"),
            })
    ray.shutdown()
    return trials


def optimum(a, points=2000):
    """The best final value the curve offers over the range, on a log grid of `points` rates."""
    best = None
    for i in range(points):
        lr = a.lr_min * (a.lr_max / a.lr_min) ** (i / (points - 1))
        *_, (_, loss) = eval_curve(lr, a.steps, a.eval_every)
        if best is None or loss < best["value"]:
            best = {"lr": lr, "value": loss}
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tool", choices=["optuna", "ray", "optimum"])
    p.add_argument("--pruner", choices=["sha", "hyperband"], default="sha")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trials", type=int, default=16)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--min-steps", type=int, default=40)
    p.add_argument("--sleep", type=float, default=0.01)
    p.add_argument("--lr-min", type=float, default=0.003)
    p.add_argument("--lr-max", type=float, default=1.0)
    a = p.parse_args()
    if a.tool == "optimum":
        print(json.dumps(optimum(a)))
        return
    t0 = time.time()
    trials = run_optuna(a) if a.tool == "optuna" else run_ray(a)
    print(json.dumps({"trials": trials, "wall_s": time.time() - t0}))


if __name__ == "__main__":
    main()
