from kafkatune.cli import main

main()
