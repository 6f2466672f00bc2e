#!/bin/sh
# Prints without end on standard output.
exec cat /dev/zero
