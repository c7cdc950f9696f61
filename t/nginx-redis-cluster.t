#!/usr/bin/perl

# nginx-redis-cluster.t -- sovereign_key_cache redis-cluster://SEEDS: the
# master reads carriers from a real Redis Cluster of three masters on
# loopback (t/lib/SKRedisCluster.pm), at start and at each reload, as it
# does from one Redis (t/nginx-cache.t).  The carrier's slot is migrated
# to another master: a reload during the migration follows the ASK
# redirection to the carrier published there meanwhile; after it, the
# old master answers MOVED and a reload finds the next carrier on the new
# one.  The workers share the stapled proof through the cluster, and a
# restart with the mirror down staples the copy read back from it.  The
# master holding the carrier stopped: a reload keeps the last good carrier
# and logs which node failed; a fresh nginx -t fails, as with one Redis
# down, and so does a cluster that no seed answers for.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use JSON::PP;

use SKTest;
use NginxTest;
use SKRedisCluster;
use SKSite;
use SKTimeline ();
use SKMirror ();

my $skip = nginx_skip() // redis_cluster_skip();
plan skip_all => $skip if $skip;

my $t = NginxTest->new;
my $d = $t->dir;
my $port = $t->port;

my $cl = SKRedisCluster->new($d);
my @rport = $cl->ports;

make_ca($d);
my ($ec, $ec_key) = make_cert($d, 'a.test', 'ec');
my ($rsa, $rsa_key) = make_cert($d, 'a.test', 'rsa');
my ($sk, $pub) = make_sk($d, 'a.test');
make_carrier($sk, $ec, 'a.test', "$d/c1.pem");
make_carrier($sk, $ec, 'a.test', "$d/c2.pem", '-d', 30);
make_carrier($sk, $ec, 'a.test', "$d/c3.pem", '-d', 60);
make_carrier($sk, $rsa, 'a.test', "$d/c-rsa.pem");
my ($c1, $c2, $c3, $crsa) =
    map { pem_certs(slurp("$d/$_.pem"))->[0] } qw(c1 c2 c3 c-rsa);

ok($cl->form, 'three cluster-enabled redis-servers form the cluster')
    or diag($cl->{create}{out}, $cl->{create}{err});

# One seed that is not there: any seed that answers gives the slot map.
my $spec = 'redis-cluster://127.0.0.1:' . free_port() . ','
    . join(',', map { "127.0.0.1:$_" } @rport[1, 2]);

# sk publish, through the cluster too; the key it printed.
sub publish {
    my ($file) = @_;
    my $r = sk('publish', '-a', $file, '--cache', $spec);
    is($r->{rc}, 0, "sk publish $file to the cluster") or diag($r->{err});
    return ($r->{out} =~ /(sk:carrier:[0-9a-f]{64})/)[0];
}

sub conf {
    my ($cache) = @_;
    $t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        ssl_certificate $ec; ssl_certificate_key $ec_key;
        ssl_certificate $rsa; ssl_certificate_key $rsa_key;
        sovereign_key_public $pub;
        sovereign_key_cache $cache;
        location / { }
    }
EOF
}

sub ec_served {
    return served_chain($port, tls => '1.3', sigalgs => 'ECDSA+SHA256')->[2]
        // '';
}

sub rsa_served {
    return served_chain($port, tls => '1.3',
        sigalgs => 'rsa_pss_rsae_sha256')->[2] // '';
}

# Log lines since mark.
my $mark = 0;
sub new_log { my $l = substr($t->log, $mark); $mark = length $t->log; $l }

my $key = publish("$d/c1.pem");
like($key, qr/^sk:carrier:/, '... stored under the key of the ECDSA key');
publish("$d/c-rsa.pem");
my ($owner) = $cl->find($key);
ok($owner, "the ECDSA carrier is on master $owner");

conf($spec);
my $r = $t->test_conf;
is($r->{rc}, 0, 'redis-cluster:// cache: nginx -t passes') or diag($r->{err});
$t->start;
is(ec_served(), $c1, 'the ECDSA carrier from the cluster is stapled');
is(rsa_served(), $crsa, 'the RSA carrier too');
unlike(new_log(), qr/sovereign_key_cache.*(unavailable|no carrier)/,
    '... with no warning');

# Move the carrier's slot to another master, by the book.  While it
# migrates, the old master still owns the slot in the map and answers
# ASK for the key, which is on the new one.
my $slot = $cl->slot($key);
my ($to) = grep { $_ != $owner } @rport;
ok($cl->migrating($slot, $owner, $to, $key),
    "slot $slot: the key moved to $to, the slot still migrating");
publish("$d/c2.pem");
like($cl->cli($owner, 'GET', $key), qr/ASK $slot 127\.0\.0\.1:$to/,
    '... the old master answers ASK');
ok($t->reload, 'reload during the migration');
is(ec_served(), $c2, '... the carrier published there meanwhile (ASK)');
is(rsa_served(), $crsa, '... and the RSA one');
unlike(new_log(), qr/sovereign_key_cache.*(unavailable|no carrier)/,
    '... with no warning');

ok($cl->migrated($slot, $owner, $to, $key),
    '... the migration done: the old master answers MOVED');
publish("$d/c3.pem");
my ($holder) = $cl->find($key);
is($holder, $to, "the next carrier is on $to");
ok($t->reload, 'reload after the migration');
is(ec_served(), $c3, '... the next carrier, from the new master');
is(rsa_served(), $crsa, '... and the RSA one');
unlike(new_log(), qr/sovereign_key_cache.*(unavailable|no carrier)/,
    '... with no warning');

# The stapled proof through the cluster: sovereign_key_staple_cache
# defaults to sovereign_key_cache, so the worker that fetches the staple
# shares it there; a restart with the mirror down staples the copy the
# new master read from the cluster (a fresh process keeps nothing else).
SKIP: {
    skip 'sk-timeline, sk-mirror or curl missing', 6
        unless -x $SKTimeline::TL && -x $SKMirror::MR && has_cmd('curl');
    my $s = NginxTest->new;
    my ($sd, $sp) = ($s->dir, $s->port);
    my $w = world($sd, names => { 'example.com' => 'https' },
        mirror => { query_cache => 0 });
    (my $wpub = $w->{sk}{'example.com'}) =~ s/\.key$/.pub/;
    make_ca($sd);
    my ($sc, $sckey) = make_cert($sd, 'example.com', 'ec');
    make_carrier($w->{sk}{'example.com'}, $sc, 'example.com',
        "$sd/carrier.pem");
    publish("$sd/carrier.pem");
    $s->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$sp ssl;
        server_name example.com;
        ssl_certificate $sc; ssl_certificate_key $sckey;
        sovereign_key_public $wpub;
        sovereign_key_cache $spec;
        sovereign_key_staple extension;
        sovereign_key_trust $w->{trust};
        location = /sk { sovereign_key_status; }
    }
EOF
    $s->start;
    my $served = sub {
        my $r = run_cmd(['curl', '-sk', '--resolve',
            "example.com:$sp:127.0.0.1", "https://example.com:$sp/sk"]);
        return (eval { decode_json($r->{out}) } // {})->{staple}{served};
    };
    ok(wait_until($served, 15), 'staple: the worker fetched one')
        or diag($s->log);
    my ($holder) = @{wait_until(sub {
        my @f = $cl->find('sk:proof:example.com'); @f ? \@f : 0 }, 5)
        || []};
    ok($holder, 'staple: ... and put it in the cluster (master '
        . ($holder // 'none') . ')');
    stop_daemon($w->{mirror}{pid});
    $s->stop;
    $s->start;
    $r = sk('staple', 'show', '--connect', "127.0.0.1:$sp", '--servername',
        'example.com', '--trust', $w->{trust});
    is($r->{rc}, 0, 'staple: restart, mirror down: the first handshake '
        . 'has it, from the cluster') or diag($r->{out} . $r->{err});
    ok($served->(), 'staple: ... and the status says it is served');
    $s->stop;
    is($s->alerts, '', 'staple: no alerts or sanitizer reports');
    stop_world($w);
}

# The master holding the carrier goes: as with one Redis down, a reload
# keeps the last good carrier and says which node failed.
$cl->stop_master($to);
ok(!wait_for_port($to, 0.5), "master $to stopped");
ok($t->reload, 'reload with that master down');
is(ec_served(), $c3, 'master down: the last good carrier');
is(rsa_served(), $crsa, '... and the RSA one (from the cluster or kept)');
like(new_log(),
    qr/\[warn\].*sovereign_key_cache "\Q$spec\E" unavailable \(.*127\.0\.0\.1:$to.*\), keeping the last good carrier for key sha256:/,
    'master down: logged, naming the node');

# A fresh process has nothing to fall back to.
$r = $t->test_conf;
isnt($r->{rc}, 0, 'master down at first start: nginx -t fails');
like($r->{err},
    qr/\[emerg\].*sovereign_key_cache "\Q$spec\E" unavailable.*no carrier loaded before/,
    '... with a clear error');
$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

# No seed answers: the same verdict as one Redis that does not.
$cl->stop;
for my $none ('redis-cluster://127.0.0.1:' . $rport[0], 'redis://127.0.0.1:'
    . $rport[0])
{
    conf($none);
    $r = $t->test_conf;
    isnt($r->{rc}, 0, "$none not answering at first start: nginx -t fails");
    like($r->{err},
        qr/\[emerg\].*sovereign_key_cache "\Q$none\E" unavailable \(.*\) and no carrier loaded before/,
        '... with a clear error');
}

done_testing();
