#!/usr/bin/perl
# The README's main job (`make demo`, scripts/walkthrough.sh) runs to the
# end: every step, on loopback, with the real daemons; and it leaves
# nothing running or on disk.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;

my $build = $ENV{BUILD} // 'build';
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x "$SKTest::ROOT/$build/sk-timeline" && -x "$SKTest::ROOT/$build/sk-mirror";
plan skip_all => 'nginx module not built'
    unless -e "$SKTest::ROOT/$build/ngx/ngx_http_sk_module.so";

my @before = glob('/tmp/sk-walkthrough.*');
my $r = run_cmd(['sh', "$SKTest::ROOT/scripts/walkthrough.sh"]);
is($r->{rc}, 0, 'the walkthrough succeeds') or diag($r->{out} . $r->{err});
like($r->{out}, qr/^accept: https:\/\/www\.example\.test:\d+: carrier/m,
    'sk verify accepts the site nginx serves');
like($r->{out}, qr/^reject: https:\/\/www\.example\.test:\d+: .*no carrier/m,
    'and rejects the impostor, saying why');
like($r->{out}, qr/^none: .*revoked \(Unbind\)/m, 'and sees the revocation');
like($r->{out}, qr/^walkthrough: done$/m, 'to the end');
my @after = glob('/tmp/sk-walkthrough.*');
is(scalar @after, scalar @before, 'its temporary directory is gone');
done_testing();
