package SKDNS;

# SKDNS -- a private DNSSEC hierarchy on loopback for the DNSSEC evidence
# tests: the zones tests/unit/dnssec_zones.sh signed (".", "test.",
# "example.test."), served by a real NSD, resolved through a real
# validating Unbound whose trust anchor is the private root's DS.
#
#   have_dns()               1 if nsd and unbound are installed
#   start_dns(DIR, ZONEDIR)  { nsd, unbound (pids), resolver ("IP:PORT"),
#                              up, log }
#   stop_dns(H)
#
# Unbound's pitfalls (shared/design/test-recipes.md): "test." is one of
# its blocked zones (nodefault); stubs only, no root hints; it must be let
# query 127.0.0.1.  It rotates the RRs of each RRset it answers with
# (rrset-roundrobin), as resolvers commonly do.

use strict;
use warnings;

use Exporter 'import';
use SKTest;

our @EXPORT = qw(start_dns stop_dns have_dns);

my @ZONES = (['.', 'root'], ['test.', 'test'], ['example.test.', 'ex']);

sub have_dns { return has_cmd('nsd') && has_cmd('unbound') }

sub nsd_conf {
    my ($dir, $zones, $port) = @_;
    my $conf = join "\n", 'server:', '    ip-address: 127.0.0.1',
        "    port: $port", '    do-ip6: no', '    username: ""',
        '    chroot: ""', "    zonesdir: \"$zones\"", '    database: ""',
        "    zonelistfile: \"$dir/zone.list\"",
        "    xfrdfile: \"$dir/xfrd.state\"", "    xfrdir: \"$dir\"",
        "    pidfile: \"$dir/nsd.pid\"", '    server-count: 1',
        'remote-control:', '    control-enable: no', '';
    $conf .= "zone:\n    name: \"$_->[0]\"\n    zonefile: \"$_->[1].signed\"\n"
        for @ZONES;
    return $conf;
}

sub unbound_conf {
    my ($dir, $zones, $port, $nsd) = @_;
    my $conf = join "\n", 'server:', '    interface: 127.0.0.1',
        "    port: $port", '    do-ip6: no', '    username: ""',
        '    chroot: ""', "    directory: \"$dir\"",
        "    pidfile: \"$dir/unbound.pid\"", '    use-syslog: no',
        '    do-not-query-localhost: no',
        "    trust-anchor-file: \"$zones/root.ds\"",
        '    local-zone: "test." nodefault',
        '    rrset-roundrobin: yes',
        '    module-config: "validator iterator"', '    num-threads: 1',
        'remote-control:', '    control-enable: no', '';
    $conf .= "stub-zone:\n    name: \"$_->[0]\"\n    stub-addr: 127.0.0.1\@$nsd\n"
        for @ZONES;
    return $conf;
}

sub start_dns {
    my ($dir, $zones) = @_;
    mkdir $dir;
    my ($np, $up) = (free_port(), free_port());
    spew("$dir/nsd.conf", nsd_conf($dir, $zones, $np));
    spew("$dir/unbound.conf", unbound_conf($dir, $zones, $up, $np));
    my $h = { dir => $dir, resolver => "127.0.0.1:$up",
        log => "$dir/dns.log" };
    $h->{nsd} = run_daemon(['nsd', '-d', '-c', "$dir/nsd.conf"], $h->{log});
    $h->{unbound} = run_daemon(['unbound', '-d', '-c', "$dir/unbound.conf"],
        $h->{log});
    $h->{up} = wait_for_port($np, 10) && wait_for_port($up, 10);
    return $h;
}

sub stop_dns {
    my ($h) = @_;
    stop_daemon($h->{$_}) for grep { $h->{$_} } qw(unbound nsd);
}

1;
