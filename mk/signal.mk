# signal area: see HACKING.md.
