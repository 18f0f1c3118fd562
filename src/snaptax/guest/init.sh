#!/bin/busybox sh
# /init of the snaptax TCG guest. It runs one script handed in on the "xfer" disk and writes the results back
# to the same disk as a tar. The console is never the data channel (it drops and garbles bytes): it is the log,
# and the control channel of gated steps, the script's questions out and the host's short answers in
# (snaptax.engines.lvmthin's `gate`, snaptax.guest.vm.GateAnswers).
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
# The kernel may have found no /dev/console in the initramfs; reopen it now that devtmpfs is mounted.
exec </dev/console >/dev/console 2>&1
mkdir -p /run /tmp /run/lvm /run/lock/lvm /dev/pts
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /run/lvm /run/lock/lvm
mount -t tmpfs tmpfs /tmp
echo 1 > /proc/sys/kernel/printk 2>/dev/null  # keep kernel chatter off the serial line (slow under TCG)

stamp() { echo "snaptax-guest: $1 at $(cut -d' ' -f1 /proc/uptime) s"; }
stamp "init started"
halt_now() { sync; poweroff -f; sleep 5; echo o > /proc/sysrq-trigger; }
fail() { echo "SNAPTAX-GUEST-FAILED: $*"; halt_now; }

for m in $(cat /etc/snaptax/modules); do
    # An accelerated crypto module may refuse a vCPU without its instructions; the generic one covers it.
    insmod "$m" 2>/tmp/insmod.err || echo "snaptax-guest: insmod ${m##*/}: $(cat /tmp/insmod.err)"
done

stamp "modules loaded"
# Disks are found by their virtio serial (set by the host), never by probe order.
. /etc/snaptax/lib.sh
i=0
while ! XFER=$(disk xfer); do
    i=$((i + 1)); [ $i -gt 200 ] && fail "no virtio disk with serial 'xfer' after 10 s: $(ls /sys/block)"
    sleep 0.05
done
stamp "xfer disk found"
mkdir -p /in /out
# The host passes the input tar's length on the command line: busybox tar would otherwise read the whole
# (mostly empty) disk looking for more members, seconds under TCG.
in_bytes=$(sed -n 's/.*snaptax.in_bytes=\([0-9]*\).*/\1/p' /proc/cmdline)
[ -n "$in_bytes" ] || fail "no snaptax.in_bytes= on the kernel command line"
head -c "$in_bytes" "$XFER" | tar -x -f - -C /in || fail "cannot read the input tar from $XFER"
[ -f /in/run.sh ] || fail "the input tar has no run.sh"
for want in $(cat /in/disks 2>/dev/null); do
    i=0
    while ! disk "$want" >/dev/null; do
        i=$((i + 1)); [ $i -gt 200 ] && fail "no virtio disk with serial '$want'"
        sleep 0.05
    done
done
stamp "disks found"
echo "SNAPTAX-READY $(cut -d' ' -f1 /proc/uptime)"

export IN=/in OUT=/out
# Run the script; its output goes to the console (for a failure's log tail) and into the results.
( cd /in && sh -e ./run.sh; echo $? > /tmp/rc ) 2>&1 | tee /out/script.log
rc=$(cat /tmp/rc 2>/dev/null || echo 255)
echo "$rc" > /out/rc
stamp "script done"
cut -d' ' -f1 /proc/uptime > /out/uptime
dmesg > /out/dmesg.txt 2>/dev/null
# Written through dd with fsync so the tar is on the host's file before poweroff.
tar -c -f - -C /out . | dd of="$XFER" bs=1M conv=fsync 2>/tmp/dd.err || fail "writing results: $(cat /tmp/dd.err)"
echo "SNAPTAX-DONE rc=$rc"
halt_now
