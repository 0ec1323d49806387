# Precompile every module of the project and of the venv (new bytecode everywhere).
python -m compileall -q /testbed /opt/venv/lib > /dev/null
