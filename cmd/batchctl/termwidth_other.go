//go:build !linux

package main

import "os"

// terminalWidth is 0 (unknown) here: set $COLUMNS to bound tables.
func terminalWidth(*os.File) int { return 0 }
