# hip area: see HACKING.md.
