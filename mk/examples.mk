# examples area: see HACKING.md.
