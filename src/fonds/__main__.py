from fonds.cli import main

main()
