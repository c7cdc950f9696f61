#!/usr/bin/perl
# sk-timeline's key is its identity: a new one is made only in a data_dir
# that holds nothing yet.  A deleted key with a log behind it, a key that
# is too open, unreadable, or not the half of timeline.pub: each refuses to
# start with a message naming the file, and timeline.pub and the log stay
# as they were (the old daemon made a new key, overwrote timeline.pub and
# then died on its own log).

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Test::More;
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
mkdir "$d/tl";
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'ca');
my $t = start_timeline("$d/tl", operator_key => "$d/operator.pub");
ok($t->{up}, 'a new data_dir: starts') or BAIL_OUT(slurp($t->{log}));
like(slurp($t->{log}), qr/timeline\.key: new timeline key sha256:[0-9a-f]{64}/,
    '... making its key');
is((stat "$d/tl/timeline.key")[2] & 07777, 0600, '... mode 0600');
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'an entry');
stop_daemon($t->{pid});

my $key = slurp("$d/tl/timeline.key");
my $pub = slurp("$d/tl/timeline.pub");
my $log = slurp("$d/tl/entries.log");

# Start, expect a refusal naming the problem, and nothing changed.
sub refused {
    my ($what, $re) = @_;
    my $before = -s $t->{log};
    restart_timeline($t);
    ok(!$t->{up}, "$what: refuses to start");
    is(stop_daemon($t->{pid}) >> 8, 78, '... exit 78');
    like(substr(slurp($t->{log}), $before), $re, '... saying why');
    is(slurp("$d/tl/entries.log"), $log, '... the log untouched');
    ok(!-e "$d/tl/timeline.pub" || slurp("$d/tl/timeline.pub") eq $pub,
        '... timeline.pub untouched');
}

unlink "$d/tl/timeline.key";
refused('timeline.key deleted',
    qr/timeline\.key: missing, yet \S+\/tl\/timeline\.pub shows a timeline lives here: restore its key from a backup/);
ok(!-e "$d/tl/timeline.key", '... and no new key made');

rename "$d/tl/timeline.pub", "$d/pub.keep";
refused('both halves deleted',
    qr/timeline\.key: missing, yet \S+\/tl\/signed-head shows a timeline lives here: restore its key/);
ok(!-e "$d/tl/timeline.key" && !-e "$d/tl/timeline.pub", '... and no new key made');
rename "$d/pub.keep", "$d/tl/timeline.pub";

spew("$d/tl/timeline.key", $key, 0644);
refused('a key readable by others',
    qr/timeline\.key: permissions 0644 are too open/);

spew("$d/tl/timeline.key", "-----BEGIN PRIVATE KEY-----\nnot base64\n", 0600);
refused('a key that does not read',
    qr/timeline\.key: not a PEM private key/);

unlink "$d/tl/timeline.key";
mkdir "$d/tl/timeline.key";
refused('a directory where the key belongs',
    qr/timeline\.key: not a regular file/);
rmdir "$d/tl/timeline.key";

spew("$d/tl/timeline.key", slurp(ed25519_key($d, 'other')), 0600);
refused('another key', qr/timeline\.pub: not the public half of \S+timeline\.key/);

# The right key back; a lost timeline.pub is written again from it.
spew("$d/tl/timeline.key", $key, 0600);
unlink "$d/tl/timeline.pub";
restart_timeline($t);
ok($t->{up}, 'the key back: starts') or diag(slurp($t->{log}));
is(slurp("$d/tl/timeline.pub"), $pub, '... writing timeline.pub again as it was');
stop_daemon($t->{pid});
unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');
done_testing();
