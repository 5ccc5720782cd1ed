#!/bin/bash
# Where a deterministic guest's time goes, by function, next to the native
# run of the same (scenario, seed). wazero built with -tags perfmap writes
# /tmp/perf-PID.map naming every compiled guest function, so `perf record`
# resolves samples in the guest's machine code ("[JIT]"). The map is only
# written when wazero compiles, so the guest is compiled afresh (empty
# wazero cache, ~25-35 CPU-s) and only samples after compilation count.
# usage (from the checkout): profile-guest.sh SCENARIO SEED OUTDIR
set -e
s=$1 seed=$2 out=$3
mkdir -p "$out/cache"
go build -tags perfmap -o "$out/locksim-perfmap" ./cmd/locksim
go build -o "$out/locksim" ./cmd/locksim
wasm=$(LOCKSIM_CACHE="$out/cache" "$out/locksim" -deterministic -prepare 2>&1 >/dev/null | sed -n 's/.*building .* into \(.*\.wasm\)$/\1/p')
[ -n "$wasm" ] || wasm=$(ls "$out"/cache/wasm/*.wasm | head -1)
rm -rf "$out/cache/wazero"
LOCKSIM_CACHE="$out/cache" perf record -F 999 -o "$out/guest.data" "$out/locksim-perfmap" -wasm "$wasm" \
  -deterministic -jobs 1 -scenario "$s" -seed "$seed" -results "" 2>"$out/guest.stderr" >/dev/null
GOMAXPROCS=1 perf record -F 4999 -o "$out/native.data" "$out/locksim" -deterministic=false -scenario "$s" -seed "$seed" -results "" >/dev/null 2>&1
# The guest's run starts after compilation: the last "run" seconds of the recording.
run=$(sed -n 's/.*, run \([0-9.]*\)s).*/\1/p' "$out/guest.stderr")
end=$(perf script -i "$out/guest.data" -F time 2>/dev/null | tail -1 | tr -d ' :')
from=$(echo "$end - $run" | bc)
agg() { # perf data, time filter -> "pct dso sym" with per-block suffixes folded into functions
  perf report -i "$1" ${2:+--time "$2"} --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep '%' |
    sed -E 's/\[JIT\] tid [0-9]+/JIT/; s/:::::L[0-9]+//; s/\[[0-9]+\/[0-9]+\]\.//; s/\[[.k]\] //' |
    awk '{p=$1; sub(/%/,"",p); $1=""; a[$0]+=p} END{for(k in a) printf "%.3f%s\n", a[k], k}' | sort -rn
}
agg "$out/guest.data" "$from," > "$out/guest.agg"
# Native symbols spelled as the wasm names are, so one classifier reads both.
agg "$out/native.data" | sed -E 's/ locksim / JIT /; s#github.com/([a-z-]+)/([a-z-]+)\.#github.com_\1_\2.#; s#github.com/([a-z]+)/([a-z]+)/#github.com_\1_\2_#; s#github.com_([a-z]+)_([a-z]+)_([a-z-]+)/#github.com_\1_\2_\3_#; s#^( *[0-9.]+ +[^ ]+ +)(encoding|net|internal|crypto|compress|mime)/#\1\2_#; s#\(\*([A-Za-z0-9_]+)\)#__\1_#g' > "$out/native.agg"
gs=$(perf script -i "$out/guest.data" --time "$from," -F time 2>/dev/null | wc -l)
ns=$(perf script -i "$out/native.data" -F time 2>/dev/null | wc -l)
echo "# guest run: $gs samples at 999 Hz; native run: $ns samples at 4999 Hz (GOMAXPROCS=1)"
echo "# category: guest ms, native ms, ratio"
join -t'|' -a1 -a2 -e 0 -o 0,1.2,2.2 <(awk -f results/sim-speed/classify-profile.awk "$out/guest.agg" | sed 's/%  /|/' | awk -F'|' '{print $2"|"$1}' | sort) \
           <(awk -f results/sim-speed/classify-profile.awk "$out/native.agg" | sed 's/%  /|/' | awk -F'|' '{print $2"|"$1}' | sort) |
  awk -F'|' -v gs="$gs" -v ns="$ns" '{g=$2*gs/100/0.999; n=$3*ns/100/4.999; printf "%-60s %6.0f %5.0f  x%.1f\n", $1, g, n, (n>0?g/n:0)}' | sort -k2 -t'|' -rn
echo "# top guest functions (ms in the guest run)"
awk -v gs="$gs" '$2=="JIT"{printf "%6.1f %s\n", $1*gs/100/0.999, $3}' "$out/guest.agg" | head -40
