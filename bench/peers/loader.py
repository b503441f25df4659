"""TensorBoard's side of the loader comparison in `deno task bench:peers`.

  generate DIR --runs R --tags T --steps S   writes R run folders of T scalar tags × S steps
                                             with torch's SummaryWriter; prints its seconds
  accumulate DIR --scalars N                 loads every run with EventAccumulator keeping N
                                             scalars a tag (0: all, -1: its default), reads
                                             the first tag of every run (the first chart),
                                             then every tag; prints when each was done (Unix
                                             seconds), the points kept and the peak RSS
"""
import argparse
import json
import os
import time


def tags(n):
    return [f"train/metric{i}" for i in range(n)]


def generate(a):
    from torch.utils.tensorboard import SummaryWriter
    t0 = time.perf_counter()
    for r in range(a.runs):
        w = SummaryWriter(log_dir=os.path.join(a.dir, f"run{r}"))
        for step in range(a.steps):
            for i, tag in enumerate(tags(a.tags)):
                w.add_scalar(tag, 1.0 / (1 + step * 0.001 * (i + 1)) + r * 0.01, step)
        w.close()
    print(json.dumps({"seconds": time.perf_counter() - t0, "calls": a.runs * a.tags * a.steps}))


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def accumulate(a):
    from tensorboard.backend.event_processing import event_accumulator as ea
    imported = time.time()
    import_rss = peak_rss_mb()
    guidance = None if a.scalars < 0 else {ea.SCALARS: a.scalars}
    runs = sorted(d for d in os.listdir(a.dir) if os.path.isdir(os.path.join(a.dir, d)))
    accs = []
    for r in runs:
        acc = ea.EventAccumulator(os.path.join(a.dir, r), size_guidance=guidance)
        acc.Reload()
        accs.append(acc)
    names = sorted(accs[0].Tags()["scalars"])
    first = [acc.Scalars(names[0]) for acc in accs]
    first_chart = time.time()
    kept = 0
    for acc in accs:
        for name in acc.Tags()["scalars"]:
            kept += len(acc.Scalars(name))
    print(json.dumps({
        "imported": imported, "first_chart": first_chart, "total": time.time(),
        "points_kept": kept, "first_chart_points": sum(len(s) for s in first),
        "series": sum(len(acc.Tags()["scalars"]) for acc in accs),
        "peak_rss_mb": peak_rss_mb(), "import_rss_mb": import_rss,
    }))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["generate", "accumulate"])
    p.add_argument("dir")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--tags", type=int, default=4)
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--scalars", type=int, default=0)
    a = p.parse_args()
    generate(a) if a.command == "generate" else accumulate(a)


if __name__ == "__main__":
    main()
