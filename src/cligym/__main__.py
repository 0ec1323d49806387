from cligym.cli import main

main()
