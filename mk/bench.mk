# bench area: see HACKING.md.
