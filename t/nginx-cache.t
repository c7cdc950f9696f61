#!/usr/bin/perl

# nginx-cache.t -- sovereign_key_cache: carriers fetched by the
# certificate key's fingerprint from the directory cache and from a real
# redis-server (TCP and unix socket), at configuration time in the master.
# A reload picks up a newly published carrier; Redis stopped at reload
# keeps the last good carrier in service and says so in the log; with
# nothing loaded before, Redis down is a clear error.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use Test::More;

use SKTest;
use NginxTest;

my $skip = nginx_skip();
plan skip_all => $skip if $skip;
my $REDIS = has_cmd('redis-server');
plan skip_all => 'redis-server is not installed' unless $REDIS;

my $t = NginxTest->new;
my $d = $t->dir;
my $port = $t->port;

my $cs = carrier_set($d);
my ($c1, $c2, $crsa) = @$cs{qw(c1 c2 crsa)};

sub publish {
    my ($file, $spec) = @_;
    my $r = sk('publish', '-a', $file, '--cache', $spec);
    is($r->{rc}, 0, "sk publish $file to $spec") or diag($r->{err});
}

sub conf { carrier_set_conf($t, $cs, $_[0]) }

sub carrier_served {
    my (%opt) = @_;
    return served_chain($port, tls => '1.3', %opt)->[2] // '';
}

# The directory cache.
mkdir "$d/cache" or die "mkdir: $!";
conf("$d/cache");
my $r = $t->test_conf;
isnt($r->{rc}, 0, 'empty directory cache: nginx -t fails');
like($r->{err},
    qr/no carrier for any certificate of the server/, '... saying so');
publish("$d/c1.pem", "$d/cache");
$r = $t->test_conf;
is($r->{rc}, 0, 'directory cache with the ECDSA carrier only: nginx -t passes')
    or diag($r->{err});
$t->start;
is(carrier_served(sigalgs => 'ECDSA+SHA256'), $c1, 'directory cache: carrier served');
is(carrier_served(sigalgs => 'rsa_pss_rsae_sha256'), '',
    'directory cache: no carrier for the RSA key, none appended');
like($t->log, qr/\[warn\].*no carrier for key sha256:/, '... with a warning');
$t->stop;

# Redis.
my $rport = free_port();
my $redis = run_daemon([$REDIS, '--port', $rport, '--bind', '127.0.0.1',
    '--unixsocket', "$d/redis.sock", '--unixsocketperm', '700',
    '--save', '', '--appendonly', 'no', '--dir', $d], "$d/redis.log");
ok(wait_for_port($rport), 'redis-server is up');
my $spec = "redis://127.0.0.1:$rport";
publish("$d/c1.pem", $spec);
publish("$d/c-rsa.pem", $spec);

conf("unix:$d/redis.sock");
$r = $t->test_conf;
is($r->{rc}, 0, 'redis over a unix socket: nginx -t passes') or diag($r->{err});

conf($spec);
$t->start;
is(carrier_served(sigalgs => 'ECDSA+SHA256'), $c1, 'redis: ECDSA carrier served');
is(carrier_served(sigalgs => 'rsa_pss_rsae_sha256'), $crsa, 'redis: RSA carrier served');

publish("$d/c2.pem", $spec);
is(carrier_served(sigalgs => 'ECDSA+SHA256'), $c1, 'before reload: still the old carrier');
ok($t->reload, 'reload');
is(carrier_served(sigalgs => 'ECDSA+SHA256'), $c2, 'after reload: the new carrier');

stop_daemon($redis);
ok(!wait_for_port($rport, 0.5), 'redis-server stopped');
ok($t->reload, 'reload with redis down');
is(carrier_served(sigalgs => 'ECDSA+SHA256'), $c2, 'redis down: the last good carrier');
is(carrier_served(sigalgs => 'rsa_pss_rsae_sha256'), $crsa, '... for each key');
like($t->log, qr/\[warn\].*sovereign_key_cache "\Q$spec\E" unavailable.*keeping the last good carrier for key sha256:/,
    'redis down: logged');

# A fresh process has nothing to fall back to.
$r = $t->test_conf;
isnt($r->{rc}, 0, 'redis down at first start: nginx -t fails');
like($r->{err},
    qr/\[emerg\].*unavailable.*no carrier loaded before/, '... with a clear error');

$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

done_testing();
