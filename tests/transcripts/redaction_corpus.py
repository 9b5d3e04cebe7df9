"""Positive and negative cases for the redactor.

Every fake secret is assembled at import time from pieces, so secret scanners do not flag this file
and no real credential is ever written down. ``POSITIVES`` pairs a text with the secret substring that
must be gone after redaction; ``NEGATIVES`` are ordinary prose and code that must come back unchanged.
"""

from __future__ import annotations

_ALNUM = "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6S7t8U9v0W1x2Y3z4"


def _fake(prefix: str, length: int, alphabet: str = _ALNUM) -> str:
    return prefix + (alphabet * (length // len(alphabet) + 1))[:length]


ANTHROPIC_KEY = _fake("sk-" + "ant-api03-", 80)
OPENAI_LEGACY_KEY = _fake("sk-", 48)
OPENAI_PROJECT_KEY = _fake("sk-" + "proj-", 60, _ALNUM + "_-")
GOOGLE_KEY = _fake("AI" + "za", 35)
SLACK_TOKEN = "xo" + "xb-1234567890-0987654321-" + _fake("", 24)
STRIPE_LIVE = _fake("sk_" + "live_", 24)
STRIPE_RESTRICTED = _fake("rk_" + "live_", 24)
HF_TOKEN = _fake("hf" + "_", 34)
AWS_KEY_ID = "AK" + "IAIOSFODNN7EXAMPLE"
AWS_TEMP_KEY_ID = "AS" + "IAIOSFODNN7EXAMPL2"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
GITHUB_PAT_CLASSIC = _fake("gh" + "p_", 36)
GITHUB_OAUTH = _fake("gh" + "o_", 36)
GITHUB_USER = _fake("gh" + "u_", 36)
GITHUB_SERVER = _fake("gh" + "s_", 36)
GITHUB_REFRESH = _fake("gh" + "r_", 36)
GITHUB_FINE = _fake("github" + "_pat_", 82, _ALNUM + "_")
JWT = (
    "ey" + "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".ey" + "JzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
KEY_BODY = "MIIEowIBAAKCAQEA7bq" + "x9fakefakefake\nQW5vdGhlciBsaW5lIG9mIGtleQ==\n"
PRIVATE_KEY_RSA = "-----BEGIN RSA PRIVATE" + " KEY-----\n" + KEY_BODY + "-----END RSA PRIVATE KEY-----"
PRIVATE_KEY_OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE" + " KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
)
BEARER_TOKEN = _fake("", 40, _ALNUM + "._-")

OPENAI_NONE_KEY = _fake("sk-" + "None-", 48)
GITLAB_PAT = _fake("gl" + "pat-", 20)
NPM_TOKEN = _fake("np" + "m_", 36)
PYPI_TOKEN = _fake("py" + "pi-AgEIcHlwaS5vcmc", 60)
SENDGRID_KEY = _fake("S" + "G.", 22) + "." + _fake("", 43)

POSITIVES: list[tuple[str, str]] = [
    (f"export ANTHROPIC_API_KEY={ANTHROPIC_KEY}", ANTHROPIC_KEY),
    (f"my key is {ANTHROPIC_KEY} please keep it", ANTHROPIC_KEY),
    (f"client = OpenAI(api_key='{OPENAI_LEGACY_KEY}')", OPENAI_LEGACY_KEY),
    (f"OPENAI_API_KEY={OPENAI_PROJECT_KEY}", OPENAI_PROJECT_KEY),
    (f"use {OPENAI_PROJECT_KEY} for the project", OPENAI_PROJECT_KEY),
    (f"https://maps.googleapis.com/maps/api/js?key={GOOGLE_KEY}", GOOGLE_KEY),
    (f"SLACK_BOT={SLACK_TOKEN}", SLACK_TOKEN),
    (f"slack token {SLACK_TOKEN}", SLACK_TOKEN),
    (f"stripe.api_key = '{STRIPE_LIVE}'", STRIPE_LIVE),
    (f"restricted key {STRIPE_RESTRICTED}", STRIPE_RESTRICTED),
    (f"huggingface-cli login --token {HF_TOKEN}", HF_TOKEN),
    (f"aws_access_key_id = {AWS_KEY_ID}", AWS_KEY_ID),
    (f"temporary creds {AWS_TEMP_KEY_ID} expire soon", AWS_TEMP_KEY_ID),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    (f'{{"aws_secret_access_key": "{AWS_SECRET}"}}', AWS_SECRET),
    # The CSV IAM's console downloads: the secret follows the key id on its line.
    (f"Access key ID,Secret access key\n{AWS_KEY_ID},{AWS_SECRET}\n", AWS_SECRET),
    (f"alice,,{AWS_TEMP_KEY_ID},{AWS_SECRET},https://1234.signin.aws.amazon.com/console", AWS_SECRET),
    (f'"{AWS_KEY_ID}", "{AWS_SECRET}"', AWS_SECRET),
    (f"git clone https://{GITHUB_PAT_CLASSIC}@github.com/o/r.git", GITHUB_PAT_CLASSIC),
    (f"GH_TOKEN={GITHUB_OAUTH}", GITHUB_OAUTH),
    (f"token {GITHUB_USER}", GITHUB_USER),
    (f"installation {GITHUB_SERVER}", GITHUB_SERVER),
    (f"refresh {GITHUB_REFRESH}", GITHUB_REFRESH),
    (f"fine-grained: {GITHUB_FINE}", GITHUB_FINE),
    (f"here is the key:\n{PRIVATE_KEY_RSA}\nthanks", "MIIEowIBAAKCAQEA7bq"),
    (f"{PRIVATE_KEY_OPENSSH}", "b3BlbnNzaC1rZXktdjEAAAAA"),
    (
        "-----BEGIN PRIVATE" + " KEY-----\nMIIEvQIBADANtruncatedkeymaterial",
        "MIIEvQIBADANtruncatedkeymaterial",
    ),
    (f"curl -H 'Authorization: Bearer {BEARER_TOKEN}' https://api.example.com", BEARER_TOKEN),
    ('curl -H "Authorization: Basic dXNlcjpodW50ZXIy" https://example.com', "dXNlcjpodW50ZXIy"),
    ("headers = {'Authorization': 'Bearer abc123opaque'}", "abc123opaque"),
    (f"sent with bearer {BEARER_TOKEN}", BEARER_TOKEN),
    (f"Authorization: Bearer {JWT}", JWT),
    (f"the session cookie was {JWT} yesterday", JWT),
    ("password=hunter2", "hunter2"),
    ("mysql --user=root --password=Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("passwd: s3cr3t!", "s3cr3t!"),
    ("db:\n  password: 'correct horse battery staple'\n", "correct horse battery staple"),
    ('{"password": "hunter2", "user": "bob"}', "hunter2"),
    ("token=abc123def456", "abc123def456"),
    ('token: "opaque-value-42"', "opaque-value-42"),
    ("secret=xyz98765", "xyz98765"),
    ("client_secret = 'deadbeefcafe'", "deadbeefcafe"),
    ('api_key="not-a-known-format-1234"', "not-a-known-format-1234"),
    ("apiKey: 'k3y-value-999'", "k3y-value-999"),
    ('const accessToken = "opaque.token.value";', "opaque.token.value"),
    ("DB_PASSWORD=supers3cret", "supers3cret"),
    ("export GITHUB_TOKEN=opaqueTokenValue99", "opaqueTokenValue99"),
    ("SECRET_KEY_BASE=0123456789abcdef0123", "0123456789abcdef0123"),
    ("SERVICE_CREDENTIALS=user:pa55word", "user:pa55word"),
    ("SMTP_PASS=mailpass77", "mailpass77"),
    ("postgres://app:pg-pa55word@db.internal:5432/app", "pg-pa55word"),
    # Passwords on command lines (issue 14: `mysql -u root -p...` was stored verbatim).
    ("mysql -u root -p" + "MyS3cretPW", "MyS3cretPW"),
    ("mysqldump -uroot -p'S3cr3t!' shop > dump.sql", "S3cr3t!"),
    ("mariadb -h db -u app -p" + "hunter22 app", "hunter22"),
    ("7z a -p" + "S3venZip backup.7z notes/", "S3venZip"),
    ("PGPASSWORD=" + "hunter22 psql -h db -U app", "hunter22"),
    ("export PGPASSWORD='pg secret 9'", "pg secret 9"),
    ("MYSQL_PWD=" + "Sup3rS3cret mysql -u root", "Sup3rS3cret"),
    ("sshpass -p 'hunter2' ssh deploy@host", "hunter2"),
    ("sshpass -p" + "Hunter22 scp dump.sql host:", "Hunter22"),
    ("curl -u admin:" + "hunter22 https://api.example.com/v1", "hunter22"),
    ("curl --user deploy:" + "Tr0ub4dor https://example.com", "Tr0ub4dor"),
    ("curl -s -uadmin:" + "s3cret99 https://example.com", "s3cret99"),
    ("mysql --password " + "Tr0ub4dor3 -u root", "Tr0ub4dor3"),
    ("gh-tool --api-token abc123def456 list", "abc123def456"),
    ('deploy --client-secret "s3cr3t value" --env prod', "s3cr3t value"),
    ("docker login -u bot -p " + "dckr_pat_abc123XYZ registry.example.com", "dckr_pat_abc123XYZ"),
    ("podman login --password Sup3rS3cret quay.io", "Sup3rS3cret"),
    ("redis-cli -h cache -a R3disPass! ping", "R3disPass!"),
    ("mongodump -u admin -p M0ngoPass --authenticationDatabase admin", "M0ngoPass"),
    ("ldapsearch -x -D cn=admin,dc=x -w LdapPa55 -b dc=x", "LdapPa55"),
    ("sqlcmd -S srv -U sa -P 'Sql$erver1' -Q 'select 1'", "Sql$erver1"),
    ("smbclient //srv/share -U user%" + "SmbPass1", "SmbPass1"),
    ("wget --http-password=W3getPass https://example.com/f", "W3getPass"),
    ("cd /srv && mysql -u root -p" + "Inl1ne db < schema.sql", "Inl1ne"),
    # Headers.
    ("Proxy-Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
    ("Authorization: 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
    ("curl -H 'X-API-Key: abc123def' https://api.example.com", "abc123def"),
    ('curl -H "X-Auth-Token: tok3n-value" https://example.com', "tok3n-value"),
    # URL user-info up to the last `@` before the host (issue 14: 8 of 10 characters leaked).
    ("postgres://u:p@" + "ssW0rdAt@host/db", "ssW0rdAt"),
    ("postgres://u:p@" + "ssW0rdAt@host/db", "p@ss"),
    ("mysql://root:p@ss:" + "w0rd@localhost:3306/db", "w0rd"),
    ("redis://:" + "r3disPass@cache:6379/0", "r3disPass"),
    ("amqp://guest:gu@" + "est99@rabbit:5672/", "est99"),
    ("before <private>my home address is 1 Elm St</private> after", "1 Elm St"),
    ("<PRIVATE>\nmulti\nline secret</PRIVATE> tail", "line secret"),
    ("unterminated <private> everything after this is hidden", "everything after this is hidden"),
    # Issue 30: shapes the first rules missed.
    (f"OPENAI_API_KEY={OPENAI_NONE_KEY}", OPENAI_NONE_KEY),
    (f"git clone https://oauth2:{GITLAB_PAT}@gitlab.com/team/app.git", GITLAB_PAT),
    (f"token is {GITLAB_PAT} for CI", GITLAB_PAT),
    (f"//registry.npmjs.org/:_authToken={NPM_TOKEN}", NPM_TOKEN),
    (f"twine upload -u __token__ -p {PYPI_TOKEN} dist/*", PYPI_TOKEN),
    (f"SENDGRID_API_KEY={SENDGRID_KEY}", SENDGRID_KEY),
    ("DATABASE_URL=postgres://admin:" + "sl/ash9Q" + "@db/app", "sl/ash9Q"),
    ("postgres://admin:" + "it's9Qz" + "@db:5432/app", "it's9Qz"),
    ("mysql\t-u root\t-p" + "S3cretPass", "S3cretPass"),
    ("Server=db;Uid=sa;Pwd=" + "hunter22x;", "hunter22x"),
    ("db_pwd=" + "hunter22y", "hunter22y"),
    ("machine api.example.com login bob password " + "s3cr3tPw", "s3cr3tPw"),
    ("default login anonymous password " + "d3fAultPw", "d3fAultPw"),
]

NEGATIVES: list[str] = [
    "the default password is admin, change it after the first login",
    "password_field = form.get('password')",
    "token_count = 5",
    "def get_token():\n    return self._token",
    "pip install scikit-learn  # not sk-learn",
    "import sklearn  # sk-learn is a common misspelling",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "session 0bdd2740-b6f7-4e7b-b1c9-f159cc83b104 resumed",
    "The secret to good tests is fast feedback.",
    "Keep your tokens and passwords out of the repository.",
    "password = request.form.get('password')",
    "token = get_token()",
    "api_key=api_key",
    "self.api_key = api_key",
    "password: str",
    "token: Optional[str] = None",
    "password=None",
    "secret = os.environ['SECRET']",
    "const token = await getToken();",
    'API_KEY="${API_KEY}"',
    "export GITHUB_TOKEN=$GITHUB_TOKEN",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
    "Authorization: Bearer <token>",
    "max_tokens=1024",
    "TOKENIZERS_PARALLELISM=false",
    "primary_key=True",
    "cache_key = f'{user}:{item}'",
    "keyboard: us",
    "bypass: true",
    "Use a Bearer token in the Authorization header.",
    "http://localhost:3000/api/users",
    "git@github.com:owner/repo.git",
    "sk-1234",
    "hf_hub_download(repo_id='x')",
    "eyJ alone is not a token",
    "for key, value in items: print(key)",
    '{"type": "tool_use", "id": "toolu_01BYfGNktE4d25hZnxHwFh2s"}',
    "The model returned 1500 tokens in 3 seconds.",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "tokens: list[str] = tokenizer.encode(text)",
    "password = password",
    "token = response",
    # `-p` and `-P` mean ports, plugins, parents, patches and pids everywhere but a few commands.
    "docker run -p 8080:80 nginx",
    "docker run -p8080:80 -e MODE=dev nginx",
    "python -m pytest -p no:cacheprovider tests",
    "mkdir -p build/out",
    "git log -p -- src/app.py",
    "ssh -p 2222 deploy@host",
    "ssh -p2222 deploy@host",
    "scp -P 2222 file host:/tmp",
    "tar -pxzf archive.tgz",
    "cp -pr src dst",
    "perl -pi -e 's/a/b/' file.txt",
    "ps -p 1234 -o rss",
    "lsof -p1234",
    "redis-cli -h cache -p 6379 ping",
    "mysql -h db -P 3306 -u app",
    "helm install web ./chart -p 80",
    "7z x archive.7z -o/tmp/out",
    # A password flag with no value prompts for one.
    "mysql -u root -p",
    "mysql -u root -p shop",
    "mongosh -u admin -p",
    "curl -u admin https://example.com",
    "docker login -u bot --password-stdin registry.example.com",
    'curl -u "$USER:$PASS" https://example.com',
    "sshpass -f ~/.pw ssh host",
    # Options that only look like secrets; metavars; variables.
    "--token TOKEN",
    "gh api --token $GH_TOKEN",
    "--max-tokens 1024",
    "--tokenizer gpt2",
    "--key-file ~/.ssh/deploy",
    "--password-file /run/secrets/db",
    "--no-password -h host",
    "use --password to give it on the command line",
    "parser.add_argument('--password', help='the password')",
    "PWD=/home/dev/project",
    "OLDPWD=/tmp",
    "pwd = os.getcwd()",
    # Addresses and URLs without a password.
    "write to alice@example.com or bob@example.org",
    "https://user@github.com/owner/repo",
    "ssh://git@host:22/owner/repo.git",
    "http://localhost:3000?next=a@b.com",
    "Authorization: required",
    "authorization: true",
    'headers = {"Authorization": auth_header}',
    "PWD=/home/dev/project",
    "OLDPWD=/tmp/build",
    "pwd = os.getcwd()",
    'cd "$(pwd)/build"',
    "curl http://localhost:8000/api/users/@me",
    "see https://example.com:8443/docs/@latest for details",
    "the password is stored in the keychain",
]
