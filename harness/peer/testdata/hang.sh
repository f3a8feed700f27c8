#!/bin/sh
# Hangs with a child, as the DataLoader does with its workers: the child's
# pid goes to $PEER_TEST_PIDFILE, then both wait forever.
sleep 600 &
echo $! > "$PEER_TEST_PIDFILE.tmp"
mv "$PEER_TEST_PIDFILE.tmp" "$PEER_TEST_PIDFILE"
wait
