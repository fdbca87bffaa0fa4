from codesight_tui.cli import main

raise SystemExit(main())
