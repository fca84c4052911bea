from graphlint.cli import main

raise SystemExit(main())
