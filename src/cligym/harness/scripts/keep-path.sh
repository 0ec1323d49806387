# shellcheck shell=sh
# /etc/profile.d/00-keep-path.sh: a login shell keeps the PATH it was started with.
#
# /etc/profile sets PATH to Debian's default before it reads this folder, so a login shell
# (bash -l, sh -l, the shell a terminal multiplexer starts) would lose the folders this
# machine puts first on PATH (a virtual environment's bin folder) that every other program
# started here has. This puts back the PATH the shell was given, read from its own initial
# environment (the image's ENV, or whatever started the shell passed on); a shell started
# with no PATH keeps Debian's default. Nothing else is set: every other variable a login
# shell inherits is left as it came.
_keep_path=$(tr '\0' '\n' < "/proc/$$/environ" 2>/dev/null | while IFS= read -r _keep_entry; do
  case $_keep_entry in
    PATH=*) printf '%s\n' "${_keep_entry#PATH=}"; break ;;
  esac
done)
if [ -n "$_keep_path" ]; then
  PATH=$_keep_path
  export PATH
fi
unset _keep_path
