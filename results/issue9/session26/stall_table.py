"""Session 26: summarize ncu's SASS source page (ncu_stalls.sh's CSV): stall reasons over the whole
kernel and the instructions with the most warp samples. python stall_table.py FILE.csv [TOP]"""
import csv
import sys
from collections import Counter


def main(path: str, top: int = 14) -> None:
    rows = list(csv.reader(open(path)))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    cols, body = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    ix = {c: i for i, c in enumerate(cols)}
    stalls = [c for c in cols if c.startswith("stall_") and "Not Issued" not in c]
    total, reasons = 0, Counter()
    for r in body:
        total += int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        for c in stalls:
            reasons[c] += int(r[ix[c]] or 0)
    print(f"{path}: {total} samples, {len(body)} instructions")
    for c, n in reasons.most_common(8):
        print(f"  {c:24s} {n:7d}  {100 * n / max(total, 1):5.1f}%")
    print("  top instructions:")
    ranked = sorted(body, key=lambda r: -int(r[ix["Warp Stall Sampling (All Samples)"]] or 0))[:top]
    for r in ranked:
        n = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        why = max(stalls, key=lambda c: int(r[ix[c]] or 0))
        print(f"  {n:6d} {100 * n / max(total, 1):5.1f}%  {r[ix['Address']][-5:]}  {r[ix['Source']].strip()[:60]:60s} {why}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
