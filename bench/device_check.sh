#!/usr/bin/env bash
# The device check, ready for a lent GPU: no network needed, reports under $OUT, within a time budget.
#
#   OUT=/path/to/reports bench/device_check.sh       # CUDA: reference, torch, hf-llama, torch-compile, liger, fla
#   OUT=/tmp/r DEVICE=cpu IMPLS="reference torch" ONLY=RMSNorm bench/device_check.sh    # a CPU dry run (the test)
#
# The machine's Python must already have torch, transformers, hypothesis, mpmath and pytest. The project is
# installed without dependencies (pip --no-deps --no-build-isolation; if that is impossible it runs from the
# working tree via PYTHONPATH); a Liger wheel carried in the working tree (wheels/liger_kernel-*.whl or
# shared/wheels/…) is installed the same way. Each implementation is checked on $DEVICE (with the CPU: the
# accelerator laws compare the device with the CPU) in the ci profile; each writes $OUT/<impl>.json, and
# $OUT/summary.md + summary.json sum them up. BUDGET (seconds, default 280) bounds the whole run: an
# implementation that would start after it is recorded as "not run (budget)". Exit status 0 when every report
# was written (failures are findings, listed in the summary), 1 otherwise.
#
# Triton adapters (TRITON_IMPLS, default "liger fla", those of IMPLS): each is also checked interpreted on the CPU
# (--triton interpret: Triton's interpreter in the workers) into $OUT/<impl>-interpreted.json, and the summary
# compares its verdicts with the compiled CUDA run's (bench/triton_verdicts.py). Without a CUDA device (DEVICE=cuda
# on a machine that has none) the script says so and stops with status 0: there is nothing compiled to compare.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:?set OUT to the directory for the reports}
DEVICE=${DEVICE:-cuda}
IMPLS=${IMPLS:-reference torch hf-llama torch-compile liger fla}
PROFILE=${PROFILE:-ci}
BUDGET=${BUDGET:-280}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
start=$(date +%s)

if $PY -m pip install -q --no-deps --no-build-isolation --no-index -e . >"$OUT/install.log" 2>&1; then
  echo "installed the project (no dependencies)" | tee -a "$OUT/run.log"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
  echo "pip install failed (see install.log): running from the working tree" | tee -a "$OUT/run.log"
fi
for wheel in wheels/liger_kernel-*.whl shared/wheels/liger_kernel-*.whl; do
  [ -e "$wheel" ] && $PY -m pip install -q --no-deps --no-index "$wheel" >>"$OUT/install.log" 2>&1 \
    && echo "installed $wheel" | tee -a "$OUT/run.log"
done
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" | tee -a "$OUT/run.log"

TRITON_IMPLS=${TRITON_IMPLS:-liger fla}
if [ "$DEVICE" = cuda ] && ! $PY -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  echo "no CUDA device here: nothing runs compiled (the interpreted tier is tox -e triton)" | tee -a "$OUT/run.log"
  printf '# Device check\n\nnot run: no CUDA device on this machine\n' >"$OUT/summary.md"
  echo '{}' >"$OUT/summary.json"
  exit 0
fi

devices=$DEVICE
[ "$DEVICE" != cpu ] && devices="cpu,$DEVICE"
for impl in $IMPLS; do
  left=$((BUDGET - ($(date +%s) - start)))
  if [ "$left" -lt 20 ]; then
    echo "$impl: not run (budget)" | tee -a "$OUT/run.log"
    continue
  fi
  args=(check "$impl" --profile "$PROFILE" --device "$devices" --json "$OUT/$impl.json" --timeout "$left" -q)
  [ -n "${ONLY:-}" ] && args+=(--only "$ONLY")
  timeout "$left" $PY -m properties.entry.cli "${args[@]}" >"$OUT/$impl.log" 2>&1
  echo "$impl: exit $? ($(($(date +%s) - start)) s so far)" | tee -a "$OUT/run.log"
  if [ "$DEVICE" != cpu ] && [[ " $TRITON_IMPLS " == *" $impl "* ]]; then  # the same adapter, interpreted
    left=$((BUDGET - ($(date +%s) - start)))
    [ "$left" -lt 20 ] && { echo "$impl interpreted: not run (budget)" | tee -a "$OUT/run.log"; continue; }
    iargs=(check "$impl" --profile "$PROFILE" --device cpu --triton interpret --json "$OUT/$impl-interpreted.json"
           --timeout "$left" -q)
    [ -n "${ONLY:-}" ] && iargs+=(--only "$ONLY")
    timeout "$left" $PY -m properties.entry.cli "${iargs[@]}" >"$OUT/$impl-interpreted.log" 2>&1
    echo "$impl interpreted: exit $? ($(($(date +%s) - start)) s so far)" | tee -a "$OUT/run.log"
  fi
done

$PY - "$OUT" $IMPLS <<'EOF'
import json, sys
from pathlib import Path
out, impls = Path(sys.argv[1]), sys.argv[2:]
rows, doc = [], {}
for impl in impls:
    path = out / f"{impl}.json"
    if not path.exists():
        rows.append(f"| {impl} | no report | | | |"); doc[impl] = None; continue
    rep = json.loads(path.read_text())
    s = rep["summary"]
    failed = [f"{r['law_id']}[{r['dtype']}-{r['device']}] ({r.get('cause')})" for r in rep["results"] if r["status"] in ("failed", "error")]
    rows.append(f"| {impl} | {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped, {s['xfailed']} xfailed "
                f"| {rep['duration']} s | {', '.join(rep['target']['devices'])} | {'; '.join(failed[:5]) or '—'} |")
    doc[impl] = {"summary": s, "duration": rep["duration"], "target": rep["target"], "failed": failed}
table = ["| implementation | results | time | devices | failures (first five) |", "|---|---|---|---|---|", *rows]
text = "# Device check\n\n" + "\n".join(table) + "\n"
sys.path.insert(0, "bench")
import triton_verdicts  # interpreted vs compiled, for the Triton adapters run both ways
for impl in impls:
    pair = out / f"{impl}-interpreted.json", out / f"{impl}.json"
    if all(p.exists() for p in pair):
        c = triton_verdicts.compare(*(json.loads(p.read_text()) for p in pair))
        doc[impl]["interpreted_vs_compiled"] = {"agree": c["agree"], "differ": c["differ"]}
        text += "\n" + triton_verdicts.markdown(impl, c)
(out / "summary.json").write_text(json.dumps(doc, indent=1) + "\n")
(out / "summary.md").write_text(text)
print(text)
sys.exit(0 if all(doc.values()) else 1)
EOF
