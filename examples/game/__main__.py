from examples.game.main import main

raise SystemExit(main())
