from cuzk_sim.cli import main

main()
