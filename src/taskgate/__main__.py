from taskgate.cli import main

main()
