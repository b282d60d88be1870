#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Chaos soak under perturbation, 14 processes in parallel, each over its own seed range.
export LD_LIBRARY_PATH=$PWD/build/soak
ulimit -n 20000 2>/dev/null
end=$(( $(date +%s) + ${MINUTES:-7} * 60 ))
for p in $(seq 0 13); do
  ( seed=$(( 1000000 + p * 100000 )); first=$seed
    while [ $(date +%s) -lt $end ]; do
      RINGIO_PERTURB=$seed RINGIO_CHAOS_SEED=$seed RINGIO_CHAOS_SEEDS=25 RINGIO_CHAOS_SECONDS=100000 \
        build/soak/chaos_tests --gtest_filter='ChaosRun.SeededScenarios/*' > $OUT/batch-$p.log 2>&1 || cp $OUT/batch-$p.log $OUT/failed-$p-$seed.log
      grep -hE '^chaos (uring|epoll|uring-poll): seeds' $OUT/batch-$p.log >> $OUT/summary-$p.txt
      seed=$(( seed + 25 ))
    done
    echo "process $p: seeds $first..$(( seed - 1 ))" >> $OUT/ranges.txt ) &
done
wait
cat $OUT/ranges.txt | sort -n -k2
echo "scenarios: $(cat $OUT/summary-*.txt | grep -oE '\(([0-9]+) scenarios' | grep -oE '[0-9]+' | paste -sd+ | bc)"
echo "failed lines:"; cat $OUT/summary-*.txt | grep -vE ', 0 failed\)' | head
ls $OUT/failed-* 2>/dev/null | head
rm -f $OUT/batch-*.log
