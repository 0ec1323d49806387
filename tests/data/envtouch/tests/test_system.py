import re

import envtouch


def test_user_agent_names_the_os():
    agent = envtouch.user_agent()
    assert re.fullmatch(r"envtouch/0\.1\.0 \(.+; [a-z][a-z0-9._-]* [0-9][0-9.]*\)", agent), agent
