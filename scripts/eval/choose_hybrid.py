#!/usr/bin/env python3
"""Chooses the default hybrid plan from `scripts/eval/hybrid.sh`'s reports, leaving one set out.

    python scripts/eval/choose_hybrid.py target/eval/hybrid drcd50 conditionalqa chunkeval cmrc200

Reads SET.csv (the overall rows) and SET.md (the "Against dense" table) of each set. A
candidate is every hybrid plan. It is *admissible* on a set when, for every strategy, it
loses no more than 0.01 Hit@5 and 0.01 full@5 against dense and no loss of Hit@1, Hit@5 or
full@5 is significant by the paired sign test (p < 0.05 with more losses than wins). Among
the candidates admissible on every training set, the chosen one has the largest mean Hit@1
gain over dense (mean over training sets and strategies); ties go to the earlier plan.

Each fold trains on all sets but one and checks the choice on the one left out; the final
default is the rule applied to all sets. Prints the folds and the final choice as Markdown.
"""

import csv
import sys
from pathlib import Path

TOLERANCE = 0.01
ALPHA = 0.05


def overall(path: Path) -> dict:
    rows = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["group"] == "all":
                rows[(row["strategy"], row["plan"])] = row
    return rows


def against_dense(path: Path) -> dict:
    """(strategy, plan) -> [(wins, losses, p)] for Hit@1, Hit@5, full@5."""
    table, inside = {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line.startswith("## Against dense")
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not inside or len(cells) != 8 or not cells[2].startswith("+"):
            continue
        paired = []
        for counts, p in zip(cells[2::2], cells[3::2]):
            wins, losses = counts.split(" / ")
            paired.append((int(wins), -int(losses), float(p)))
        table[(cells[0], cells[1])] = paired
    return table


def load(folder: Path, name: str) -> dict:
    rows, paired = overall(folder / f"{name}.csv"), against_dense(folder / f"{name}.md")
    strategies = sorted({s for s, _ in rows})
    plans = [p for s, p in rows if s == strategies[0] and p.startswith("hybrid")]
    return {"rows": rows, "paired": paired, "strategies": strategies, "plans": plans}


def verdict(data: dict, plan: str) -> tuple[bool, float, list[str]]:
    """Whether `plan` is admissible on one set, its mean Hit@1 gain, and what fails."""
    gains, failures = [], []
    for strategy in data["strategies"]:
        dense, ours = data["rows"][(strategy, "dense")], data["rows"][(strategy, plan)]
        delta = lambda col: float(ours[col]) - float(dense[col])
        gains.append(delta("hit_at_1"))
        for col in ("hit_at_5", "full"):
            if delta(col) < -TOLERANCE - 1e-9:
                failures.append(f"{strategy} {col} {delta(col):+.3f}")
        for metric, (wins, losses, p) in zip(("Hit@1", "Hit@5", "full@5"), data["paired"][(strategy, plan)]):
            if losses > wins and p < ALPHA:
                failures.append(f"{strategy} {metric} +{wins}/-{losses} p={p:.3f}")
    return not failures, sum(gains) / len(gains), failures


def choose(sets: dict, names: list[str]) -> tuple[str | None, dict]:
    plans = sets[names[0]]["plans"]
    scored = {}
    for plan in plans:
        verdicts = [verdict(sets[n], plan) for n in names]
        if all(ok for ok, _, _ in verdicts):
            scored[plan] = sum(g for _, g, _ in verdicts) / len(verdicts)
    best = max(scored, key=lambda p: (scored[p], -plans.index(p)), default=None)
    return best, scored


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    folder, names = Path(sys.argv[1]), sys.argv[2:]
    sets = {n: load(folder, n) for n in names}
    print("| left out | admissible on the other sets (mean Hit@1 gain) | chosen | on the set left out |")
    print("|---|---|---|---|")
    for held in names:
        train = [n for n in names if n != held]
        best, scored = choose(sets, train)
        listed = ", ".join(f"{p} ({g:+.3f})" for p, g in scored.items()) or "none"
        if best is None:
            check = "-"
        else:
            ok, gain, failures = verdict(sets[held], best)
            check = f"{'admissible' if ok else 'NOT admissible: ' + '; '.join(failures)}, Hit@1 {gain:+.3f}"
        print(f"| {held} | {listed} | {best or 'none'} | {check} |")
    best, scored = choose(sets, names)
    print()
    print(f"On all sets: admissible {', '.join(f'{p} ({g:+.3f})' for p, g in scored.items()) or 'none'}; "
          f"chosen: {best or 'none'}")
    for name in names:
        for plan in sets[name]["plans"]:
            ok, gain, failures = verdict(sets[name], plan)
            if not ok:
                print(f"- {name} {plan}: {'; '.join(failures)}")


if __name__ == "__main__":
    main()
