"""`uv run python -m prices refresh`: rewrite prices/catalog.csv from the Cloud Billing Catalog
API. Needs Application Default Credentials (`gcloud auth application-default login`) or an API
key in the environment variable named by `--api-key-env`; `--dry-run` prints what would change.
Exits 1, writing nothing, when the API fails or a SKU match cannot be trusted."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from google.api_core import exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import billing_v1

from prices.catalog import CATALOG_FILE, CatalogError, load
from prices.refresh import CatalogClient, RefreshError, describe, refresh


def _client(api_key_env: str | None) -> billing_v1.CloudCatalogClient:
    if api_key_env is None:
        return billing_v1.CloudCatalogClient()
    key = os.environ.get(api_key_env)
    if not key:
        raise RefreshError(f"--api-key-env {api_key_env}: that environment variable is empty")
    return billing_v1.CloudCatalogClient(client_options={"api_key": key})


def main(
    argv: list[str] | None = None,
    client_factory: Callable[[str | None], CatalogClient] = _client,
) -> int:
    parser = argparse.ArgumentParser(prog="python -m prices", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("refresh", help="rewrite the catalog from the Billing API")
    command.add_argument("--catalog", type=Path, default=CATALOG_FILE, help="the catalog file")
    command.add_argument("--dry-run", action="store_true", help="print changes, write nothing")
    command.add_argument(
        "--api-key-env", metavar="VAR", help="read an API key from this environment variable"
    )
    args = parser.parse_args(argv)
    try:
        catalog = load(args.catalog)
        result = refresh(client_factory(args.api_key_env), catalog)
    except auth_exceptions.DefaultCredentialsError as error:
        print(
            f"no credentials: {error}\nRun `gcloud auth application-default login`, or pass "
            "--api-key-env with an API key that may call the Cloud Billing API",
            file=sys.stderr,
        )
        return 2
    except (CatalogError, RefreshError, exceptions.GoogleAPIError) as error:
        print(f"nothing written: {error}", file=sys.stderr)
        return 1
    print("\n".join(describe(result)))
    if not args.dry_run:
        args.catalog.write_text(result.catalog.to_csv())
        print(f"wrote {args.catalog}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
