"""The client the official MCP conformance suite's client scenarios run: ``python
conformance_client.py SERVER_URL``, the scenario named by ``MCP_CONFORMANCE_SCENARIO`` (and its
context, when it has one, in ``MCP_CONFORMANCE_CONTEXT``), as test_conformance_mcp.py runs it.

Every scenario goes through ``agenttool_mcp.aconnect``: it lists the server's tools and calls
what the scenario offers, the way an agent would; the OAuth scenarios give it the SDK's
``OAuthClientProvider`` with a ``FileTokenStore`` (in a fresh temporary folder) and an
authorization step that follows the authorization server's redirect without a browser.  It
exits 0 when the flow ran and 1, with the error on stderr, when it failed (the suite judges
what went over the wire either way).
"""

import asyncio
import json
import os
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import agenttool as at
import agenttool_mcp as am

REDIRECT_URI = "http://localhost:3000/callback"
# The suite's client-metadata document URL for the CIMD scenario (auth/basic-cimd).
CIMD_URL = "https://conformance-test.local/client-metadata.json"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _authorize(url):
    """The authorization server's answer to ``url``, as a browser would reach the redirect
    URI: the query of the Location it redirects to (code, state and iss)."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=30) as reply:
            location = reply.headers.get("Location")
    except urllib.error.HTTPError as exc:  # the 302 itself, not followed
        location = exc.headers.get("Location")
    if not location:
        raise RuntimeError(f"the authorization server did not redirect: {url}")
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


async def _oauth(url, scenario, context, folder):
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    store = am.FileTokenStore(os.path.join(folder, "tokens.json"))
    if "client_id" in context:  # pre-registered: the suite hands over the client's credentials
        from mcp.shared.auth import OAuthClientInformationFull

        info = OAuthClientInformationFull(
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            redirect_uris=[REDIRECT_URI],
            token_endpoint_auth_method="client_secret_basic",
        )
        await store.set_client_info(info)
    answer = {}

    async def redirect(authorization_url):
        answer.clear()
        answer.update(await asyncio.to_thread(_authorize, authorization_url))

    async def callback():
        if "code" not in answer:
            raise RuntimeError("no authorization code came back")
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="agenttool conformance client", redirect_uris=[REDIRECT_URI]
        ),
        storage=store,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=CIMD_URL if scenario == "auth/basic-cimd" else None,
    )


def _accept(content):
    return lambda question: at.Answer(at.Action.ACCEPT, dict(content))


async def _call(remote, name, args, elicitor=None):
    """Call ``name`` when the server lists it; an ``isError`` answer is the server's to give."""
    if remote.lookup(name) is None:
        return None
    try:
        return await remote.call(name, args, elicitor=elicitor)
    except am.RemoteError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return None


async def run(url, scenario, context):
    auth = None
    folder = tempfile.mkdtemp(prefix="conformance-client-")
    if scenario.startswith("auth/"):
        auth = await _oauth(url, scenario, context, folder)
    async with am.aconnect(url=url, auth=auth, elicitation=True, connect_timeout=20) as remote:
        names = [t.name for t in remote.tools()]
        if scenario == "json-schema-ref-no-deref":
            return  # listing is the whole scenario: the $ref must not be fetched
        if scenario == "json-schema-2020-12-preservation":
            focal = remote.lookup("json_schema_2020_12_tool")
            if focal is None:
                raise RuntimeError("the server does not list json_schema_2020_12_tool")
            await _call(remote, "json_schema_echo", {"schema": focal.parameters})
            return
        if scenario == "elicitation-sep1034-client-defaults":
            # the answer leaves every field out: the defaults are the client's to fill in
            await _call(remote, "test_client_elicitation_defaults", {}, _accept({}))
            return
        if scenario == "sep-2322-client-request-state":
            confirm = _accept({"confirmed": True})
            for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
                await _call(remote, name, {}, confirm)
            await _call(remote, "test_mrtr_no_result_type", {})
            return
        if scenario == "sse-retry":
            await _call(remote, "test_reconnection", {})
            return
        if context.get("toolCalls"):  # the calls the scenario asks for, with its arguments
            for call in context["toolCalls"]:
                await _call(remote, call["name"], call.get("arguments") or {})
            return
        if scenario.startswith("http-"):  # the header scenarios: every tool, its arguments
            for tool in remote.tools():
                await _call(remote, tool.name, _example_args(tool.parameters))
            return
        if names:  # initialize, tools_call, request-metadata, auth/*: list, then call one
            await _call(remote, names[0], {"a": 2, "b": 3} if scenario == "tools_call" else {})


def _example_args(schema):
    """Arguments that fit the simple object schema of a header scenario's tool."""
    args = {}
    for key, prop in ((schema or {}).get("properties") or {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if "enum" in prop:
            args[key] = prop["enum"][0]
        elif kind == "string":
            args[key] = "value"
        elif kind in ("integer", "number"):
            args[key] = 1
        elif kind == "boolean":
            args[key] = True
    return args


def main():
    if len(sys.argv) != 2 or not os.environ.get("MCP_CONFORMANCE_SCENARIO"):
        print("usage: MCP_CONFORMANCE_SCENARIO=NAME conformance_client.py URL", file=sys.stderr)
        return 2
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        asyncio.run(run(sys.argv[1], scenario, context))
    except BaseException as exc:  # the suite reads the wire; this says what the client saw
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
