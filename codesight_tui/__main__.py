from codesight_tui.cli import main

if __name__ == "__main__":  # guarded: the model's child process imports this module again
    raise SystemExit(main())
