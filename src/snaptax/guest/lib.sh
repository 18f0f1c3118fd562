# Helpers for guest scripts (sourced by /init and available to run.sh as /etc/snaptax/lib.sh).

# disk SERIAL -> /dev/vdX of the virtio disk the host gave that serial.
disk() {
    for d in /sys/block/vd*; do
        [ -e "$d/serial" ] || continue
        # read, a shell builtin, not cat: every exec costs tens of ms under TCG, and counters run twice a step
        read -r ser < "$d/serial"
        if [ "$ser" = "$1" ]; then echo "/dev/${d##*/}"; return 0; fi
    done
    return 1
}

# blkstat SERIAL... -> one line per disk: "serial field1 ... field17" from /sys/block/*/stat.
blkstat() {
    for s in "$@"; do
        dev=$(disk "$s") || { echo "no disk $s" >&2; return 1; }
        read -r stat < "/sys/block/${dev##*/}/stat"
        echo "$s $stat"
    done
}
