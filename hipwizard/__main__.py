from hipwizard.cli import main

raise SystemExit(main())
