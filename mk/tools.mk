# tools area: see HACKING.md.
