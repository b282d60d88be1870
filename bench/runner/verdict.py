# SPDX-License-Identifier: Apache-2.0
"""A target's verdict from the spread of its per-round ratios.

Within a grid cell the servers run in turn, round after round (A B A B ...),
so each round gives one ratio of two runs made seconds apart: ringio's figure
over the other side's.  The verdict looks at all of them:

- "yes" when every round's ratio clears the limit,
- "no" when every round's ratio misses it,
- "within noise" when some clear it and some miss: the spread covers the limit.

With n rounds, min-max of the per-round ratios holds the median of the ratio's
distribution with probability 1 - 2^(1-n) (the sign test: 97% for 6 rounds,
75% for 3), whatever the distribution, so "yes" and "no" are seldom
contradicted by the next run.  One round has no spread: its ratio decides, and
the measured text says "1 round".
"""
import statistics

NOISE = "noise"  # the `met` value of a target whose spread covers its limit
DASH = "\u2013"


def paired_ratios(mine, theirs, invert=False):
    """Per-round ratios mine/theirs (theirs/mine with invert) of the rounds
    both sides have, in round order.  mine, theirs: [[round, value], ...]."""
    a = {r: v for r, v in mine or [] if v is not None}
    b = {r: v for r, v in theirs or [] if v is not None}
    out = []
    for r in sorted(set(a) & set(b)):
        num, den = (b[r], a[r]) if invert else (a[r], b[r])
        if den:
            out.append(num / den)
    return out


def clears(ratio, limit, higher_is_better):
    return ratio >= limit if higher_is_better else ratio <= limit


def judge(ratios, limit, higher_is_better):
    """{ratio (median), low, high, n, met} of per-round ratios, or None when
    there are none.  met is True, False or NOISE (see the module's text)."""
    if not ratios:
        return None
    ok = [clears(r, limit, higher_is_better) for r in ratios]
    met = True if all(ok) else False if not any(ok) else NOISE
    return {"ratio": statistics.median(ratios), "low": min(ratios), "high": max(ratios), "n": len(ratios),
            "met": met}


def _fmt(r, limit):
    shown = f"{r:.3f}"
    if float(shown) == limit and r != limit:  # rounding would hide which side of the limit it is
        shown = f"{r:.5f}"
    return shown


def measured_text(j, limit, suffix=""):
    """'0.973x (0.912-1.031, 5 rounds)': the median per-round ratio, then the
    spread the verdict was judged on."""
    head = f"{_fmt(j['ratio'], limit)}x{suffix}"
    if j["n"] == 1:
        return head + " (1 round)"
    return f"{head} ({_fmt(j['low'], limit)}{DASH}{_fmt(j['high'], limit)}, {j['n']} rounds)"


RULE = ("Verdicts: within a cell the servers take turns, round after round, so each round gives one ratio of "
        "two runs made seconds apart. \"yes\": every round's ratio clears the target; \"no\": every round's "
        "ratio misses it; \"within noise\": the rounds' spread (min" + DASH + "max, shown in brackets after "
        "the median ratio) covers the target, so this run cannot tell. With n rounds the min" + DASH + "max "
        "of the ratios holds their median with probability 1 - 2^(1-n) (75% for 3 rounds, 97% for 6). A single round "
        "has no spread: its ratio decides.")
