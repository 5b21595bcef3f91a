create table [Person].[BusinessEntityAddress] (
    [BusinessEntityID] int not null,
    [AddressID] int not null,
    [AddressTypeID] int not null,
    [rowguid] uniqueidentifier not null,
    [ModifiedDate] datetime not null,
    constraint [PK_BusinessEntityAddress] primary key ([BusinessEntityID], [AddressID], [AddressTypeID])
)
go
if object_id(N'[Person].[sp_MSins_PersonBusinessEntityAddress]', N'P') is not null drop procedure [Person].[sp_MSins_PersonBusinessEntityAddress]
go
--INSERT procedure using CALL syntax
create procedure [Person].[sp_MSins_PersonBusinessEntityAddress]
@c1 int,@c2 int,@c3 int,@c4 uniqueidentifier,@c5 datetime
as
begin
insert into [Person].[BusinessEntityAddress]([BusinessEntityID]
,[AddressID]
,[AddressTypeID]
,[rowguid]
,[ModifiedDate])
values (
 @c1
,@c2
,@c3
,@c4
,@c5
)
end
go
if object_id(N'[Person].[sp_MSupd_PersonBusinessEntityAddress]', N'P') is not null drop procedure [Person].[sp_MSupd_PersonBusinessEntityAddress]
go
--UPDATE procedure using SCALL syntax
create procedure [Person].[sp_MSupd_PersonBusinessEntityAddress]
@c1 int = null,@c2 int = null,@c3 int = null,@c4 uniqueidentifier = null,@c5 datetime = null,@pkc1 int,@pkc2 int,@pkc3 int
,@bitmap binary(1)
as
begin
declare @primarykey_text nvarchar(2048) = N''
if (substring(@bitmap,1,1) & 1 = 1) or (substring(@bitmap,1,1) & 2 = 2) or (substring(@bitmap,1,1) & 4 = 4)
begin
update [Person].[BusinessEntityAddress] set
[BusinessEntityID] = case substring(@bitmap,1,1) & 1 when 1 then @c1 else [BusinessEntityID] end
,[AddressID] = case substring(@bitmap,1,1) & 2 when 2 then @c2 else [AddressID] end
,[AddressTypeID] = case substring(@bitmap,1,1) & 4 when 4 then @c3 else [AddressTypeID] end
,[rowguid] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [rowguid] end
,[ModifiedDate] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [ModifiedDate] end
where [BusinessEntityID] = @pkc1
  and [AddressID] = @pkc2
  and [AddressTypeID] = @pkc3
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[BusinessEntityID] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[AddressID] = ' + isnull(convert(nvarchar(100),@pkc2,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[AddressTypeID] = ' + isnull(convert(nvarchar(100),@pkc3,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[Person].[BusinessEntityAddress]', @param2=@primarykey_text, @param3=13233
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated UPDATE command for Table ''[Person].[BusinessEntityAddress]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
else
begin
update [Person].[BusinessEntityAddress] set
[rowguid] = case substring(@bitmap,1,1) & 8 when 8 then @c4 else [rowguid] end
,[ModifiedDate] = case substring(@bitmap,1,1) & 16 when 16 then @c5 else [ModifiedDate] end
where [BusinessEntityID] = @pkc1
  and [AddressID] = @pkc2
  and [AddressTypeID] = @pkc3
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[BusinessEntityID] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[AddressID] = ' + isnull(convert(nvarchar(100),@pkc2,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[AddressTypeID] = ' + isnull(convert(nvarchar(100),@pkc3,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[Person].[BusinessEntityAddress]', @param2=@primarykey_text, @param3=13233
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated UPDATE command for Table ''[Person].[BusinessEntityAddress]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
end
go
if object_id(N'[Person].[sp_MSdel_PersonBusinessEntityAddress]', N'P') is not null drop procedure [Person].[sp_MSdel_PersonBusinessEntityAddress]
go
--DELETE procedure using CALL syntax
create procedure [Person].[sp_MSdel_PersonBusinessEntityAddress]
@pkc1 int,@pkc2 int,@pkc3 int
as
begin
declare @primarykey_text nvarchar(2048) = N''
delete [Person].[BusinessEntityAddress]
where [BusinessEntityID] = @pkc1
  and [AddressID] = @pkc2
  and [AddressTypeID] = @pkc3
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N'[BusinessEntityID] = ' + isnull(convert(nvarchar(100),@pkc1,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[AddressID] = ' + isnull(convert(nvarchar(100),@pkc2,1), N'NULL') + N', '
        set @primarykey_text = @primarykey_text + N'[AddressTypeID] = ' + isnull(convert(nvarchar(100),@pkc3,1), N'NULL')
        if exists (select * from sys.all_parameters where object_id = object_id(N'sp_MSreplraiserror') and [name] = N'@param3')
            exec sp_MSreplraiserror @errorid=20598, @param1=N'[Person].[BusinessEntityAddress]', @param2=@primarykey_text, @param3=13234
        else if object_id(N'sp_MSreplraiserror') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N'The row was not found at the Subscriber when applying the replicated DELETE command for Table ''[Person].[BusinessEntityAddress]'' with Primary Key(s): ' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end
end
go
