"""The ceiling: a bare Starlette JSON endpoint under uvicorn, run as its own process.

python -m bench.ceiling --port 8190 [--workers N]"""

from __future__ import annotations

import argparse

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def hello(request):
    return JSONResponse({"jsonmodel_type": "ceiling", "ok": True})


app = Starlette(routes=[Route("/", hello), Route("/version", hello)])


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    uvicorn.run("bench.ceiling:app", host="127.0.0.1", port=args.port, workers=args.workers, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
