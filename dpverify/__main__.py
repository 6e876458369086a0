from dpverify.cli import main

main(prog_name="dpverify")
