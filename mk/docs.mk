# docs area: see HACKING.md.
