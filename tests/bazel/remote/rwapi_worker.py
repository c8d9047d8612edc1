#!/usr/bin/env python3
"""A minimal Remote Workers API worker: test scaffolding for remote_test.sh.

BuildGrid schedules Bazel's actions but ships no worker of its own any more
(it points to buildbox-worker, which is not packaged for Debian or PyPI).
This worker is the least that runs an REAPI action faithfully, and nothing
more: it is not for production use (no sandbox, no resource limits, one
action at a time).

  1. CreateBotSession, then UpdateBotSession in a loop (the keep-alive and
     the way leases arrive).
  2. For each ACTIVE lease: the payload is the Action (or its digest). Fetch
     the Command and the input root from the CAS into an empty directory,
     run the command there with exactly the Command's environment (nothing
     inherited: an action that needs PATH or HOME fails here as it would on
     a real farm), and upload the outputs, stdout and stderr.
  3. Report the lease COMPLETED with the ActionResult.

Usage: rwapi_worker.py --remote HOST:PORT [--instance NAME] --workdir DIR
Needs BuildGrid's Python package (its generated protos) and grpcio.
"""

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.bytestream import bytestream_pb2, bytestream_pb2_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc
from buildgrid._protos.google.rpc import code_pb2

CHUNK = 1 << 20


class Cas:
    """Reads and writes blobs of one instance."""

    def __init__(self, channel, instance):
        self.instance = instance
        self.cas = re_grpc.ContentAddressableStorageStub(channel)
        self.bytestream = bytestream_pb2_grpc.ByteStreamStub(channel)

    def _resource(self, digest):
        name = "blobs/%s/%d" % (digest.hash, digest.size_bytes)
        return self.instance + "/" + name if self.instance else name

    def read(self, digest):
        if digest.size_bytes == 0:
            return b""
        data = b"".join(r.data for r in self.bytestream.Read(
            bytestream_pb2.ReadRequest(resource_name=self._resource(digest))))
        if hashlib.sha256(data).hexdigest() != digest.hash:
            raise RuntimeError("CAS returned wrong bytes for %s" % digest.hash)
        return data

    def read_proto(self, digest, message):
        message.ParseFromString(self.read(digest))
        return message

    def write(self, data):
        digest = re_pb2.Digest(hash=hashlib.sha256(data).hexdigest(), size_bytes=len(data))
        missing = self.cas.FindMissingBlobs(re_pb2.FindMissingBlobsRequest(
            instance_name=self.instance, blob_digests=[digest])).missing_blob_digests
        if not missing or digest.size_bytes == 0:
            return digest
        prefix = self.instance + "/" if self.instance else ""
        upload = "%suploads/%s/blobs/%s/%d" % (prefix, uuid.uuid4(), digest.hash, digest.size_bytes)

        def requests():
            offset = 0
            while True:
                chunk = data[offset:offset + CHUNK]
                last = offset + len(chunk) >= len(data)
                yield bytestream_pb2.WriteRequest(resource_name=upload, write_offset=offset,
                                                  data=chunk, finish_write=last)
                offset += len(chunk)
                if last:
                    return

        self.bytestream.Write(requests())
        return digest


def stage(cas, digest, path):
    """Writes the Directory tree `digest` into `path`."""
    os.makedirs(path, exist_ok=True)
    directory = cas.read_proto(digest, re_pb2.Directory())
    for f in directory.files:
        target = os.path.join(path, f.name)
        with open(target, "wb") as out:
            out.write(cas.read(f.digest))
        os.chmod(target, 0o755 if f.is_executable else 0o644)
    for link in directory.symlinks:
        os.symlink(link.target, os.path.join(path, link.name))
    for d in directory.directories:
        stage(cas, d.digest, os.path.join(path, d.name))


def file_node(cas, path, name):
    with open(path, "rb") as f:
        data = f.read()
    return re_pb2.FileNode(name=name, digest=cas.write(data),
                           is_executable=os.access(path, os.X_OK))


def tree_of(cas, path):
    """An output directory as a Tree: its root and every directory below."""
    children = []

    def walk(p):
        d = re_pb2.Directory()
        for name in sorted(os.listdir(p)):
            full = os.path.join(p, name)
            if os.path.islink(full):
                d.symlinks.add(name=name, target=os.readlink(full))
            elif os.path.isdir(full):
                child = walk(full)
                children.append(child)
                blob = child.SerializeToString(deterministic=True)
                d.directories.add(name=name, digest=re_pb2.Digest(
                    hash=hashlib.sha256(blob).hexdigest(), size_bytes=len(blob)))
                cas.write(blob)
            else:
                d.files.append(file_node(cas, full, name))
        return d

    root = walk(path)
    return re_pb2.Tree(root=root, children=children)


def execute(cas, action, workdir):
    """Runs one action; returns its ActionResult."""
    command = cas.read_proto(action.command_digest, re_pb2.Command())
    root = os.path.join(workdir, "exec")
    shutil.rmtree(root, ignore_errors=True)
    stage(cas, action.input_root_digest, root)
    cwd = os.path.join(root, command.working_directory)
    outputs = list(command.output_paths) or list(command.output_files) + list(command.output_directories)
    for o in outputs:
        os.makedirs(os.path.dirname(os.path.join(cwd, o)), exist_ok=True)
    env = {v.name: v.value for v in command.environment_variables}
    timeout = action.timeout.seconds or None
    try:
        run = subprocess.run(list(command.arguments), cwd=cwd, env=env, capture_output=True,
                             timeout=timeout)
        exit_code, stdout, stderr = run.returncode, run.stdout, run.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        exit_code, stdout, stderr = 127, b"", ("worker: %s\n" % e).encode()
    result = re_pb2.ActionResult(exit_code=exit_code, stdout_digest=cas.write(stdout),
                                 stderr_digest=cas.write(stderr))
    for o in outputs:
        full = os.path.join(cwd, o)
        if os.path.isdir(full) and not os.path.islink(full):
            tree = tree_of(cas, full)
            result.output_directories.add(
                path=o, tree_digest=cas.write(tree.SerializeToString(deterministic=True)))
        elif os.path.isfile(full):
            node = file_node(cas, full, o)
            result.output_files.add(path=o, digest=node.digest, is_executable=node.is_executable)
    shutil.rmtree(root, ignore_errors=True)
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--remote", required=True, help="HOST:PORT of the Bots and CAS services")
    p.add_argument("--instance", default="")
    p.add_argument("--workdir", required=True)
    p.add_argument("--log", help="append one line per action here")
    args = p.parse_args()
    channel = grpc.insecure_channel(args.remote)
    bots = bots_pb2_grpc.BotsStub(channel)
    cas = Cas(channel, args.instance)
    session = bots.CreateBotSession(bots_pb2.CreateBotSessionRequest(
        parent=args.instance,
        bot_session=bots_pb2.BotSession(bot_id="fatlink-test-worker-%d" % os.getpid(),
                                        status=bots_pb2.BotStatus.OK)))
    while True:
        done = False
        for lease in session.leases:
            if lease.state != bots_pb2.LeaseState.ACTIVE:
                continue
            action = re_pb2.Action()
            if lease.payload.Is(re_pb2.Action.DESCRIPTOR):
                lease.payload.Unpack(action)
            else:
                digest = re_pb2.Digest()
                lease.payload.Unpack(digest)
                cas.read_proto(digest, action)
            start = time.monotonic()
            try:
                result = execute(cas, action, args.workdir)
                lease.status.code = code_pb2.OK
                lease.result.Pack(result)
            except Exception as e:  # a broken action must not kill the worker
                lease.status.code = code_pb2.INTERNAL
                lease.status.message = str(e)
                result = None
            lease.state = bots_pb2.LeaseState.COMPLETED
            done = True
            if args.log:
                with open(args.log, "a") as log:
                    log.write("%s exit=%s %.2fs\n" % (lease.id, result.exit_code if result else "error",
                                                      time.monotonic() - start))
        try:
            session = bots.UpdateBotSession(bots_pb2.UpdateBotSessionRequest(
                name=session.name, bot_session=session), timeout=30)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNAVAILABLE:
                return 0  # the server went away: the test is over
            if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
        if not done and not any(l.state == bots_pb2.LeaseState.ACTIVE for l in session.leases):
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
