#!/bin/bash
# usage: sweep.sh BINARY OUTDIR LO HI
bin=$1; out=$2; lo=$3; hi=$4; mkdir -p $out
while read bug sc; do
  nice -n 15 $bin -deterministic=false -scenario $sc -bug $bug -seeds $lo..$hi -results $out/res > $out/$bug.out 2>&1
  echo "$bug $sc rc=$? runs=$(grep -c ^SEED $out/$bug.out) restore_failures=$(grep -c 'DEBUG restore failed' $out/$bug.out) panics=$(grep -c '^panic' $out/$bug.out)"
done <<L
follower-grant networkPartition
local-renew leaderCrash
wall-clock-expiry clockSkew
token-in-memory leaderCrash
queue-in-memory leaderThrash
forget-settled leaderCrash
orphan-waiters orphanWaiters
release-on-give-up sharedExclusiveMix
unknown-as-unavailable networkPartition
L
