#!/bin/sh
# Prints its input back: the arguments, as JSON.
cat
