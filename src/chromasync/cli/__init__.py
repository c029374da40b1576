"""The `chromasync` command line (click): parse flags, call one seam, render."""
