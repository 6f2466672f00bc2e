#!/bin/sh
# Prints a JSON string holding a byte that is not UTF-8.
printf '"caf\351"'
