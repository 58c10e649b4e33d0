# loader area: see HACKING.md.
