#!/bin/sh
# Cost of quota counting in the lock state machine: one uncontended
# acquire+release pair (two log entries) without and with a quota stamped,
# and the base commit (130666e, before quotas) for comparison. User CPU
# seconds for 2,000,000 pairs, alternating, because wall ns/op is noise on
# a loaded machine. Run from the repository root.
set -e
git archive 130666e | (rm -rf /tmp/lockbase && mkdir -p /tmp/lockbase && tar -x -C /tmp/lockbase)
(cd /tmp/lockbase && go test -c -o /tmp/lock_base.test ./core/lock/)
go test -c -o /tmp/lock_acl.test ./core/lock/
for i in 1 2 3; do
  /usr/bin/time -f "base    user %U s" /tmp/lock_base.test -test.run '^$' -test.bench 'ApplyAcquireRelease$' -test.benchtime 2000000x >/dev/null
  /usr/bin/time -f "noquota user %U s" /tmp/lock_acl.test -test.run '^$' -test.bench 'ApplyAcquireRelease$' -test.benchtime 2000000x >/dev/null
  /usr/bin/time -f "quota   user %U s" /tmp/lock_acl.test -test.run '^$' -test.bench 'ApplyAcquireReleaseQuota$' -test.benchtime 2000000x >/dev/null
done
