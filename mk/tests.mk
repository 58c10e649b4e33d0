# tests area: see HACKING.md.
